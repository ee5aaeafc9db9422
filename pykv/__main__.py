import sys

from pykv.cli import main

sys.exit(main())
