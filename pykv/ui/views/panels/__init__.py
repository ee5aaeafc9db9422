"""One part of a page: the sidebar, the modelled row beside the measured one, a lesson step's text, tokens, question
and exercise, the class panel, the kernel view, the review pack button, the Server and Sweep pages' parts."""
