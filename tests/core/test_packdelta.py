"""Layer 1: blobs stored as pack deltas, resolved by GitFS (gitfs/repo/packdelta.py), on
real repositories packed by git: offset and reference deltas, chains that cross files,
a small cache, many threads, and what the reader must refuse (libgit2 reads those)."""

import os
import random
import threading

import pytest

from gitfs.repo.packdelta import DeltaBlobs, DeltaError, apply_delta
from gitfs.repo.packindex import PackIndexes
from helpers import CountingRepository, Remote, git

FILES = 60


@pytest.fixture
def project(tmp_path):
    """Files alike enough for git to delta them against each other, in a few versions."""
    remote = Remote(tmp_path / "project")
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    body = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(150)]
    for version in range(4):
        files = {}
        for number in range(FILES):
            lines = list(body)
            lines[number % len(lines)] = f"file {number} version {version}"
            lines.insert(rng.randrange(len(lines)), f"{rng.random()}")
            files[f"src/d{number % 6}/f{number:03d}.txt"] = "\n".join(lines).encode()
        remote.commit(files, f"version {version}")
    return remote


def repack(remote, offsets=True):
    git("-c", f"repack.useDeltaBaseOffset={'true' if offsets else 'false'}",
        "repack", "-q", "-a", "-d", "-f", "--depth=50", "--window=250", cwd=remote.work)
    git("prune-packed", cwd=remote.work)


def pack_entries(remote):
    """{object id: whether git stored it as a delta} from git verify-pack."""
    pack_dir = remote.work / ".git" / "objects" / "pack"
    (idx,) = [name for name in os.listdir(pack_dir) if name.endswith(".idx")]
    entries = {}
    for line in git("verify-pack", "-v", str(pack_dir / idx)).splitlines():
        fields = line.split()
        if len(fields) >= 5 and len(fields[0]) == 40 and fields[1] == "blob":
            entries[fields[0]] = len(fields) >= 7  # a delta also names its depth and base
    return entries


def blob_ids(repo):
    found = set()
    for commit in repo.git.walk(repo.git.head.target):
        stack = [commit.tree]
        while stack:
            for entry in stack.pop():
                if entry.type_str == "tree":
                    stack.append(repo.git[entry.id])
                else:
                    found.add(entry.id)
    return sorted(found)


def delta_blobs(remote, **options):
    return DeltaBlobs(PackIndexes(str(remote.work / ".git" / "objects")), **options)


@pytest.mark.parametrize("offsets", [True, False], ids=["offset deltas", "reference deltas"])
def test_every_delta_resolves_to_git_s_bytes(project, offsets):
    repack(project, offsets)
    entries = pack_entries(project)
    assert sum(entries.values()) > FILES  # deltas across files and versions
    repo = CountingRepository(str(project.work), project.branch)
    deltas = delta_blobs(project)
    resolved = 0
    for oid in blob_ids(repo):
        data = deltas.blob(oid.raw)
        if data is not None:
            assert data == repo.git[oid].data, oid
            resolved += 1
        assert entries[str(oid)] == (data is not None), oid  # whole objects are streamed, not here
    assert resolved == sum(entries.values())


def test_an_open_history_file_stored_as_a_delta_is_read_without_libgit2(project):
    repack(project)
    repo = CountingRepository(str(project.work), project.branch)
    oid = next(oid for oid in blob_ids(repo) if pack_entries(project)[str(oid)])
    reader = repo.blob_reader(oid)
    assert bytes(reader.read(1 << 20, 0)) == repo.git[oid].data
    assert repo.whole_reads == 0
    repo.release_caches()  # an idle mount forgets the resolved objects; reads go on
    assert deltas_kept(repo) == 0
    assert bytes(repo.blob_reader(oid).read(1 << 20, 0)) == repo.git[oid].data


def deltas_kept(repo):
    return repo._delta_blobs.kept_bytes


def test_a_small_cache_stays_within_its_bound_and_reads_right(project):
    repack(project)
    repo = CountingRepository(str(project.work), project.branch)
    deltas = delta_blobs(project, cache_bytes=32 * 1024)
    for oid in blob_ids(repo):
        data = deltas.blob(oid.raw)
        assert data is None or data == repo.git[oid].data
        assert deltas.kept_bytes <= 32 * 1024
    deltas.clear()
    assert deltas.kept_bytes == 0


def test_many_threads_share_one_cache(project):
    repack(project)
    repo = CountingRepository(str(project.work), project.branch)
    oids = blob_ids(repo)
    want = {oid: repo.git[oid].data for oid in oids}
    deltas = delta_blobs(project, cache_bytes=64 * 1024)
    wrong = []

    def read_all(seed):
        order = list(oids)
        random.Random(seed).shuffle(order)
        for oid in order:
            data = deltas.blob(oid.raw)
            if data is not None and data != want[oid]:
                wrong.append(oid)

    threads = [threading.Thread(target=read_all, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_a_wrong_base_is_caught_by_the_id_and_libgit2_reads_the_blob(project):
    repack(project)
    repo = CountingRepository(str(project.work), project.branch)
    oid = next(oid for oid in blob_ids(repo) if pack_entries(project)[str(oid)])
    deltas = repo._delta_blobs
    assert deltas.blob(oid.raw) is not None
    for location, data in list(deltas._cache.items()):  # every resolved object kept, damaged
        deltas._cache[location] = data[:-1] + bytes([data[-1] ^ 1])
    assert deltas.blob(oid.raw) is None
    assert bytes(repo.blob_reader(oid).read(1 << 20, 0)) == repo.git[oid].data
    assert repo.whole_reads == 1


def test_a_damaged_pack_gives_none_never_wrong_bytes(project):
    repack(project)
    repo = CountingRepository(str(project.work), project.branch)
    oids = [oid for oid in blob_ids(repo) if pack_entries(project)[str(oid)]]
    want = {oid: repo.git[oid].data for oid in oids}
    pack_dir = project.work / ".git" / "objects" / "pack"
    (pack,) = [pack_dir / name for name in os.listdir(pack_dir) if name.endswith(".pack")]
    data = bytearray(pack.read_bytes())
    for at in range(200, len(data) - 20, 997):  # damage bytes all through the entries
        data[at] ^= 0x5A
    os.chmod(pack, 0o644)
    pack.write_bytes(bytes(data))
    deltas = delta_blobs(project)
    answered = [deltas.blob(oid.raw) for oid in oids]
    assert all(found is None or found == want[oid] for oid, found in zip(oids, answered))
    assert any(found is None for found in answered)


def test_a_delta_that_reaches_past_its_base_is_refused():
    assert apply_delta(b"hello world", bytes([11, 5, 0x90 | 0x01, 6, 5])) == b"world"
    with pytest.raises(DeltaError):
        apply_delta(b"hello world", bytes([11, 5, 0x90 | 0x01, 8, 5]))  # bytes 8..13 of 11
    with pytest.raises(DeltaError):
        apply_delta(b"hello", bytes([11, 5, 0x90, 5]))  # a base of another size
    with pytest.raises(DeltaError):
        apply_delta(b"hello world", bytes([11, 5, 0]))  # instruction 0 is reserved
    with pytest.raises(DeltaError):
        apply_delta(b"hello world", bytes([11, 9, 4]) + b"abc")  # an insert past the end
