"""The lesson file format as data: the file split into steps (``markdown``), its YAML read safely (``safe_yaml``), the
models it parses into (``schema`` and a step's blocks), its limits and its errors."""
