"""python -m gradcheck: see gradcheck.testing.cli."""
import sys

from gradcheck.testing.cli import main

sys.exit(main())
