from setuptools import setup

# cffi's build hook can only be declared here; everything else is in setup.cfg.
setup(cffi_modules=["benchtop/engine/_build.py:ffibuilder", "benchtop/engine/_build.py:pq_ffibuilder"])
