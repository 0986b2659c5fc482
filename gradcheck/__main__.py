"""python -m gradcheck: see gradcheck.cli."""
import sys

from gradcheck.cli import main

sys.exit(main())
