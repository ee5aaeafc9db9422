import sys

from pykv.cli.main import main

sys.exit(main())
