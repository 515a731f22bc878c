# The cffi extension that benchtop/engine/_build.py compiles from native/.
# cffi generates no annotations, so its two handles are Any here; the typed
# surface is the Engine wrapper in benchtop/engine/__init__.py.
from typing import Any

ffi: Any
lib: Any
