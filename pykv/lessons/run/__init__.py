"""Playing a lesson on a live engine: the player (``player``), its side runs (``runs``, measured once per server by
``run_cache``), one lesson's steps shared by a class (``shared``), and an exercise checked on a learner's own Lab
(``exercises``)."""
