# The cffi extension benchtop/engine/_build.py compiles for libpq (empty when
# built without it); the typed surface is benchtop/target/pq.py.
from typing import Any

ffi: Any
lib: Any
