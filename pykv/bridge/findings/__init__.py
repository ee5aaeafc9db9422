"""The findings: everything the rules look at (``evidence``), the rules by topic (``storm``, ``capacity``,
``prefix``), how many preemptions what was read can show (``count``), the server's own figures for the advice
(``scale``), the fix each names in the recognised release's flags, in vLLM's tuning order (``fixes``), and every rule
run in turn (``rules.find_all``)."""
