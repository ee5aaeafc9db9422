"""Loading the course: a lesson file read and parsed (``loader``), each step checked before anything runs
(``lesson_walk``), its images kept offline (``offline``), and the two ways through the course (``workshop``).
Never imports the engine."""
