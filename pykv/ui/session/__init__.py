"""One browser session's state: its Lab and seat, budgets, class membership, the course it reads and
the app's routes. No drawing here."""
