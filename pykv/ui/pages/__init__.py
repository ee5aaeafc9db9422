"""The pages app.py routes (Playground, Sweep, Lessons, About). A page wires widgets to the Lab and to
views; pages never import pages."""
