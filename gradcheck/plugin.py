"""The pytest plugin's entry point (pytest11 in setup.cfg): `gradcheck.testing.plugin`.

The module is aliased rather than re-exported, so that `-p gradcheck.plugin`
and the entry point register one plugin, not two with the same options."""
import sys

from gradcheck.testing import plugin

sys.modules[__name__] = plugin
