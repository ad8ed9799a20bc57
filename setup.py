from setuptools import setup

setup(cffi_modules=["build.py:ffibuilder"])
