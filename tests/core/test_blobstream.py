"""Layer 1: blobs streamed out of their object files (gitfs/repo/objects/blobstream.py,
packindex.py) on real repositories written by git: loose objects, whole objects in
a pack, deltas (libgit2's to read), damaged files.
"""

import gc
import os
import random
import shutil
import threading
import zlib

import pytest

from gitfs.repo.objects import blobstream, packindex
from gitfs.repo.objects.blobstream import CorruptObject
from gitfs.repo.objects.packindex import PACK_OFS_DELTA, PACK_REF_DELTA, OpenPacks, PackIndex
from helpers import CountingRepository, Remote, git

SIZE = 2 * 1024 * 1024 + 333
CHUNK = 128 * 1024


@pytest.fixture
def remote(tmp_path):
    remote = Remote(tmp_path / "blobs")
    rng = random.Random(5)
    remote.big = rng.randbytes(SIZE)
    text = "".join(f"line {number} of a text that git will store as a delta\n" for number in range(20000))
    remote.text_old, remote.text_new = text.encode(), (text + "one more line\n").encode()
    remote.commit({"big.bin": remote.big, "text.txt": remote.text_old}, "first")
    remote.commit({"text.txt": remote.text_new, "small": b"tiny\n"}, "second")
    return remote


@pytest.fixture
def small_window(monkeypatch):
    monkeypatch.setattr(blobstream, "WINDOW", 256 * 1024)
    monkeypatch.setattr(blobstream, "MAX_INFLATE", 64 * 1024)


def repository(remote):
    return CountingRepository(str(remote.work), remote.branch)


def blob_id(repo, path, rev="HEAD"):
    return repo.git.revparse_single(f"{rev}:{path}").id


def read_in_order(reader, chunk=CHUNK):
    pieces, offset = [], 0
    while piece := reader.read(chunk, offset):
        pieces.append(bytes(piece))
        offset += len(piece)
    return b"".join(pieces)


def repack(remote):
    git("repack", "-q", "-a", "-d", "-f", "--depth=50", "--window=50", cwd=remote.work)
    git("prune-packed", cwd=remote.work)


def loose_path(remote, oid):
    return remote.work / ".git" / "objects" / str(oid)[:2] / str(oid)[2:]


def test_a_loose_blob_is_streamed_from_its_file_never_whole(remote):
    repo = repository(remote)
    oid = blob_id(repo, "big.bin")
    assert loose_path(remote, oid).exists()  # git commits loose objects
    reader = repo.blob_reader(oid)
    assert not reader.loaded
    assert read_in_order(reader) == remote.big
    assert reader.read(CHUNK, SIZE) == b"" and reader.read(CHUNK, SIZE + 10) == b""
    reader.close()
    assert not reader.loaded and repo.whole_reads == 0


def test_a_whole_blob_in_a_pack_is_streamed_from_the_pack(remote):
    repack(remote)
    repo = repository(remote)
    oid = blob_id(repo, "big.bin")
    assert not loose_path(remote, oid).exists()
    where = repo._object_files.locate(str(oid), oid.raw)
    assert where is not None and where[0].endswith(".pack") and where[1] > 0
    for path, content in (("big.bin", remote.big), ("text.txt", remote.text_new), ("small", b"tiny\n")):
        reader = repo.blob_reader(blob_id(repo, path))
        assert read_in_order(reader, chunk=100_000) == content, path
        reader.close()


def test_a_delta_in_a_pack_is_read_whole_by_libgit2(remote):
    repack(remote)
    repo = repository(remote)
    old = blob_id(repo, "text.txt", "HEAD~1")
    assert repo._object_files.locate(str(old), old.raw) is None  # stored as a delta of the new text
    reader = repo.blob_reader(old)
    assert read_in_order(reader) == remote.text_old
    assert repo.whole_reads == 1


@pytest.mark.parametrize("read_whole", [packindex.SEARCH_READ_ENTRIES, 1, 0])
def test_a_pack_index_finds_every_object_git_lists(remote, monkeypatch, read_whole):
    # A bucket is read whole once narrowed to read_whole ids: at 1 and 0 every lookup of
    # this small pack takes the binary search's steps, as in a clone of 40,000 objects.
    monkeypatch.setattr(packindex, "SEARCH_READ_ENTRIES", read_whole)
    repack(remote)
    pack_dir = remote.work / ".git" / "objects" / "pack"
    (idx,) = [name for name in os.listdir(pack_dir) if name.endswith(".idx")]
    index = PackIndex(str(pack_dir / idx), OpenPacks())
    listed = git("verify-pack", "-v", str(pack_dir / idx)).splitlines()
    objects = [line.split() for line in listed if len(line.split()) >= 5 and len(line.split()[0]) == 40]
    assert index.count == len(objects)
    for fields in objects:
        assert index.offset(bytes.fromhex(fields[0])) == int(fields[4])
    assert index.offset(bytes(20)) is None and index.offset(b"\xff" * 20) is None
    for fields in objects:  # an id one off a listed one is in no pack
        raw_id = bytes.fromhex(fields[0])
        assert index.offset(raw_id[:-1] + bytes([raw_id[-1] ^ 1])) is None
    # In one pass over sorted ids (repeated ones, and ids no pack holds, among them).
    ids = sorted([bytes.fromhex(fields[0]) for fields in objects] * 2 + [bytes(20), b"\xff" * 20, b"\x80" * 20])
    assert index.offsets(ids) == [index.offset(raw_id) for raw_id in ids]
    # Nothing of the index is mapped into this process (its pages would count in RSS).
    with open("/proc/self/maps") as maps:
        assert str(pack_dir / idx) not in maps.read()


def test_a_fetched_pack_is_found_after_the_first_lookup(remote):
    repack(remote)
    repo = repository(remote)
    first = blob_id(repo, "big.bin")
    assert repo._object_files.locate(str(first), first.raw) is not None  # packs listed now
    new = remote.commit({"later.bin": os.urandom(300_000)}, "later")
    repack(remote)  # a second pack-or-one-new-pack: the listing changed
    oid = blob_id(repo, "later.bin", new)
    where = repo._object_files.locate(str(oid), oid.raw)
    assert where is not None and where[0].endswith(".pack")


def open_packs():
    """{descriptor: file} of the pack files this process holds open (a deleted one ends
    with " (deleted)"); libgit2 holds its own."""
    packs = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, closed by now
        if ".pack" in link:
            packs[fd] = link
    return packs


def test_a_pack_is_opened_once_and_let_go_when_it_is_replaced(remote):
    repack(remote)
    repo = repository(remote)
    first = blob_id(repo, "big.bin")
    before = open_packs()
    for _ in range(50):
        assert repo._object_files.locate(str(first), first.raw) is not None
    held = {fd: link for fd, link in open_packs().items() if fd not in before}
    assert len(held) == 1  # one descriptor for all 50 lookups
    new = remote.commit({"later.bin": os.urandom(300_000)}, "later")
    repack(remote)  # one new pack replaces the old one, which git deletes
    oid = blob_id(repo, "later.bin", new)
    assert repo._object_files.locate(str(oid), oid.raw) is not None
    gc.collect()
    now = open_packs()
    assert not [fd for fd in held if now.get(fd) == held[fd] + " (deleted)"]  # the old pack's is closed


def test_an_idle_repository_lets_its_packs_go_and_reads_on(remote):
    repack(remote)
    repo = repository(remote)
    oid = blob_id(repo, "big.bin")
    before = open_packs()
    assert repo.blob_size(oid) == len(remote.big)
    assert [fd for fd in open_packs() if fd not in before]  # the pack GitFS reads sizes from
    repo.release_caches()
    assert not [fd for fd in open_packs() if fd not in before]
    assert repo.blob_size(oid) == len(remote.big)
    reader = repo.blob_reader(oid)
    assert read_in_order(reader) == remote.big
    reader.close()


def test_reads_out_of_order_within_the_window_need_no_second_pass(remote, small_window):
    repo = repository(remote)
    oid = blob_id(repo, "big.bin")
    reader = repo.blob_reader(oid)
    offsets = list(range(0, SIZE, CHUNK))
    for first in range(0, len(offsets), 2):  # pairs swapped, as two readahead threads may
        for offset in reversed(offsets[first:first + 2]):
            assert reader.read(CHUNK, offset) == remote.big[offset:offset + CHUNK]
    assert reader._starts == 1 and repo.whole_reads == 0


def test_a_read_before_the_window_starts_again_once_then_reads_whole(remote, small_window):
    repo = repository(remote)
    reader = repo.blob_reader(blob_id(repo, "big.bin"))
    assert reader.read(100, SIZE - 100) == remote.big[-100:]  # a zip reader looks at the end first
    assert reader.read(CHUNK, 0) == remote.big[:CHUNK]  # then from the top: one more pass
    assert reader._starts == 2 and repo.whole_reads == 0
    assert reader.read(CHUNK, SIZE - CHUNK) == remote.big[-CHUNK:]
    assert reader.read(CHUNK, 1000) == remote.big[1000:1000 + CHUNK]  # back again: whole now
    assert repo.whole_reads == 1
    assert read_in_order(reader) == remote.big
    reader.close()
    assert not reader.loaded


def test_the_stream_keeps_only_its_window(remote, small_window):
    repo = repository(remote)
    reader = repo.blob_reader(blob_id(repo, "big.bin"))
    assert read_in_order(reader, chunk=4096) == remote.big
    kept = reader._stream._kept
    assert kept <= blobstream.WINDOW + blobstream.MAX_INFLATE


def test_threads_reading_one_file_at_once_get_the_right_bytes(remote):
    repo = repository(remote)
    reader = repo.blob_reader(blob_id(repo, "big.bin"))
    offsets = list(range(0, SIZE, CHUNK))
    wrong = []

    def read(mine):
        for offset in mine:
            if bytes(reader.read(CHUNK, offset)) != remote.big[offset:offset + CHUNK]:
                wrong.append(offset)

    threads = [threading.Thread(target=read, args=(offsets[start::4],)) for start in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_a_truncated_loose_object_is_a_corrupt_object(remote):
    repo = repository(remote)
    oid = blob_id(repo, "big.bin")
    path = loose_path(remote, oid)
    os.chmod(path, 0o644)
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) // 2)
    reader = repo.blob_reader(oid)
    assert reader.read(CHUNK, 0) == remote.big[:CHUNK]
    with pytest.raises(CorruptObject):
        read_in_order(reader)


def test_a_loose_object_of_the_wrong_size_or_garbage_is_a_corrupt_object(remote):
    repo = repository(remote)
    oid = blob_id(repo, "small")
    path = loose_path(remote, oid)
    os.chmod(path, 0o644)
    path.write_bytes(zlib.compress(b"blob 4\0tiny"))  # the size libgit2 reads from the header differs
    repo._sizes[oid] = 5
    with pytest.raises(CorruptObject):
        repo.blob_reader(oid).read(10, 0)
    path.write_bytes(b"not zlib at all")
    with pytest.raises(CorruptObject):
        repo.blob_reader(oid).read(10, 0)



def test_a_loose_blob_size_is_read_from_its_header_even_when_the_file_is_truncated(remote):
    repo = repository(remote)
    oid = blob_id(repo, "big.bin")
    files = blobstream.ObjectFiles(str(remote.work / ".git" / "objects"))
    assert files.loose_size(str(oid)) == len(remote.big)
    path = loose_path(remote, oid)
    os.chmod(path, 0o644)
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) // 2)  # libgit2 1.5 spins on this file; its header is enough
    assert files.loose_size(str(oid)) == len(remote.big)
    assert repository(remote).blob_size(oid) == len(remote.big)


@pytest.mark.parametrize("base_by", ["offset", "id"])
def test_every_packed_object_size_is_read_from_its_entry_as_git_tells_it(tmp_path, base_by):
    """Whole objects and deltas of both kinds (a delta names its base by offset in a
    repack, by id in a thin pack a fetch received): the size a delta's stream starts with
    is the object's, and matches `git cat-file --batch-check` for every object."""
    remote = Remote(tmp_path / "sizes")
    rng = random.Random(7)
    lines = [f"line {number}: {rng.random()}\n" for number in range(3000)]
    for version in range(12):
        for edit in range(40):
            lines[rng.randrange(len(lines))] = f"edit {version}.{edit}: {rng.random()}\n"
        remote.commit({"text.txt": "".join(lines), f"notes/{version}.txt": "".join(lines[::7]),
                       "random.bin": rng.randbytes(5000 + version)}, f"version {version}")
    git("-c", f"repack.useDeltaBaseOffset={'true' if base_by == 'offset' else 'false'}",
        "repack", "-q", "-a", "-d", "-f", "--depth=50", "--window=50", cwd=remote.work)
    git("prune-packed", cwd=remote.work)
    listed = git("cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objectsize)", cwd=remote.work)
    expected = {name: int(size) for name, size in (line.split() for line in listed.splitlines())}
    files = blobstream.ObjectFiles(str(remote.work / ".git" / "objects"))
    delta_kind = PACK_OFS_DELTA if base_by == "offset" else PACK_REF_DELTA
    kinds = [index.entry_header(offset)[0] for index, offset in
             (files.packs.find(bytes.fromhex(name)) for name in expected)]
    assert kinds.count(delta_kind) > 20, "the repack stored deltas of this kind"
    for name, size in expected.items():
        assert files.blob_size(name, bytes.fromhex(name)) == size, name
    # The same sizes from one batch, in the order asked; an id no pack holds has none.
    assert files.packs.sizes([bytes.fromhex(name) for name in expected] + [bytes(20)]) == [*expected.values(), None]


@pytest.mark.parametrize("damage", ["type", "stream"])
def test_a_damaged_pack_entry_gives_no_size_rather_than_a_wrong_one(remote, tmp_path, damage):
    repack(remote)
    objects = tmp_path / "objects"
    shutil.copytree(remote.work / ".git" / "objects", objects)
    files = blobstream.ObjectFiles(str(objects))
    old = blob_id(repository(remote), "text.txt", "HEAD~1")
    index, offset = files.packs.find(old.raw)
    kind, _size, data_at = index.entry_header(offset)
    assert kind == PACK_OFS_DELTA
    os.chmod(index.pack_path, 0o644)
    with open(index.pack_path, "r+b") as pack:
        if damage == "type":  # a type git never writes (5)
            pack.seek(offset)
            first = pack.read(1)[0]
            pack.seek(offset)
            pack.write(bytes([(first & 0x8F) | 0x50]))
        else:  # the delta's zlib stream, after the base's distance back
            pack.seek(data_at)
            while pack.read(1)[0] & 0x80:
                pass
            pack.write(b"\0" * 16)
    assert files.blob_size(str(old), old.raw) is None  # libgit2 answers (or fails) instead


def test_a_packed_blob_size_is_read_from_the_pack(remote):
    repack(remote)
    repo = repository(remote)
    for path, content in (("big.bin", remote.big), ("text.txt", remote.text_new)):
        oid = blob_id(repo, path)
        assert blobstream.ObjectFiles(str(remote.work / ".git" / "objects")).loose_size(str(oid)) is None
        assert repo.blob_size(oid) == len(content)
    old = blob_id(repo, "text.txt", "HEAD~1")  # a delta
    assert repo.blob_size(old) == len(remote.text_old)
