"""The findings: everything the rules look at (``evidence``), the rules by topic (``capacity``, ``prefix``), the fix
each names in the recognised release's flags (``fixes``), and every rule run in turn (``rules.find_all``)."""
