"""Bundles librill into the package when one is built: RILL_LIB, else ../build/librill.so
beside this file. Without one, the installed package finds librill at run time
(RILL_LIB, then the system's library path, e.g. after `make install`)."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def built_library():
    for path in (os.environ.get('RILL_LIB'), os.path.join(HERE, '..', 'build', 'librill.so')):
        if path and os.path.isfile(path):
            return os.path.realpath(path)
    return None


class BuildWithLibrary(build_py):
    def run(self):
        build_py.run(self)
        lib = built_library()
        if lib:
            dest = os.path.join(self.build_lib, 'rill', '_lib')
            os.makedirs(dest, exist_ok=True)
            shutil.copyfile(lib, os.path.join(dest, 'librill.so'))


setup(cmdclass={'build_py': BuildWithLibrary})
