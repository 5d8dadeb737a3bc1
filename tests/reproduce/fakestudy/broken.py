"""A stage module that exists but fails to import (its own dependency is missing)."""

import qkov_no_such_dependency  # noqa: F401
