"""The fake provider server ships in the package (``agent.testing.fakeprovider``) so plugin
authors can use it too; the tests import it under this short name."""

from agent.testing.fakeprovider import *  # noqa: F401,F403
from agent.testing.fakeprovider import FakeProvider, Reply, Request  # noqa: F401
