"""lpc_build.py: a PEP 517 build backend in the standard library alone, for livepush_capture.

It packs livepush_capture/*.py into a pure-Python wheel (and an sdist), so that
`pip install ./protocol/python` works offline with no setuptools or wheel installed.
"""
import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME, VERSION = 'livepush_capture', '1.0.0'
HERE = os.path.dirname(os.path.abspath(__file__))
DIST_INFO = '%s-%s.dist-info' % (NAME, VERSION)
METADATA = ('Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: Write a LivePush capture helper: Capture '
            'Link 1.0, the helper side (standard library only)\nRequires-Python: >=3.8\n' % (NAME, VERSION))
WHEEL = 'Wheel-Version: 1.0\nGenerator: lpc_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n'


def _sources():
    package = os.path.join(HERE, NAME)
    return sorted('%s/%s' % (NAME, f) for f in os.listdir(package) if f.endswith('.py'))


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()
    return '%s,sha256=%s,%d' % (path, digest, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    os.makedirs(os.path.join(metadata_directory, DIST_INFO), exist_ok=True)
    for name, text in (('METADATA', METADATA), ('WHEEL', WHEEL)):
        with open(os.path.join(metadata_directory, DIST_INFO, name), 'w') as f:
            f.write(text)
    return DIST_INFO


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    filename = '%s-%s-py3-none-any.whl' % (NAME, VERSION)
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), 'w', zipfile.ZIP_DEFLATED) as wheel:
        files = [(path, open(os.path.join(HERE, path), 'rb').read()) for path in _sources()]
        files += [(DIST_INFO + '/METADATA', METADATA.encode()), (DIST_INFO + '/WHEEL', WHEEL.encode())]
        for path, data in files:
            wheel.writestr(path, data)
            records.append(_record_line(path, data))
        records.append(DIST_INFO + '/RECORD,,')
        wheel.writestr(DIST_INFO + '/RECORD', '\n'.join(records) + '\n')
    return filename


def build_sdist(sdist_directory, config_settings=None):
    base = '%s-%s' % (NAME, VERSION)
    filename = base + '.tar.gz'
    with tarfile.open(os.path.join(sdist_directory, filename), 'w:gz') as sdist:
        for path in _sources() + ['pyproject.toml', 'lpc_build.py']:
            sdist.add(os.path.join(HERE, path), arcname='%s/%s' % (base, path))
        info = tarfile.TarInfo('%s/PKG-INFO' % base)
        data = METADATA.encode()
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return filename
