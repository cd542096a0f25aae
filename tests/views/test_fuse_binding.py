"""Layer 2: GitFSFUSE (gitfs/fuse_binding.py) against the mfusepy that is installed.

GitFSFUSE overrides mfusepy internals (`FUSE.readdir_fuse_3`, `FUSE.read`) and calls others
(`FUSE._readdir`, `c_stat`, `set_st_attrs`, the attributes `FUSE.__init__` sets,
the `fuse_fill_dir_t` filler); the Router sets fields of libfuse's structs
through mfusepy's ctypes classes. None of that is public API: an mfusepy release
may rename or reshape it. These tests pin each name and signature, then drive
readdir_fuse_3 and read with mfusepy's own ctypes types (a real `fuse_fill_dir_t` filler,
a real `fuse_file_info`), so that an upgrade fails here rather than at mount time.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import inspect
import os
import stat

import mfusepy
import pytest

from gitfs.cache_policy import ATTRIBUTES, ENTRIES, PAGES
from gitfs.fuse_binding import (
    FUSE_CAP_READDIRPLUS_AUTO,
    FUSE_FILL_DIR_PLUS,
    FUSE_READDIR_PLUS,
    GitFSFUSE,
    KernelCache,
    _disconnected,
    fill_stat,
)
from gitfs.router import Router
from gitfs.views.base import StampedStat

READDIR_FUSE_3 = ["self", "path", "buf", "filler", "offset", "fip", "flags"]


def parameters(function) -> list[str]:
    return list(inspect.signature(function).parameters)


# -- the names and signatures -------------------------------------------------------

def test_libfuse_3_so_the_override_exists():
    # GitFSFUSE only defines readdir_fuse_3 under libfuse 3, which GitFS requires.
    assert mfusepy.fuse_version_major == 3
    assert "readdir_fuse_3" in GitFSFUSE.__dict__


def test_libfuse_flag_values():
    # libfuse 3's fuse.h and fuse_common.h; mfusepy only mentions them in comments.
    assert FUSE_READDIR_PLUS == 1 << 0  # enum fuse_readdir_flags
    assert FUSE_FILL_DIR_PLUS == 1 << 1  # enum fuse_fill_dir_flags
    assert FUSE_CAP_READDIRPLUS_AUTO == 1 << 14


def test_fuse_init_picks_the_suffixed_callback_and_sets_the_attributes_used():
    init = mfusepy.FUSE.__init__
    assert parameters(init)[:6] == ["self", "operations", "mountpoint", "raw_fi", "encoding", "errors"]
    source = inspect.getsource(init)
    # libfuse 3 callbacks are looked up as NAME + "_fuse_3" on the FUSE object ...
    assert "name + '_fuse_3'" in source or 'name + "_fuse_3"' in source
    # ... and a plain `readdir` beside readdir_fuse_3 is an error in FUSE.__init__.
    assert not hasattr(mfusepy.FUSE, "readdir")
    for attribute in ("operations", "encoding", "errors", "use_ns"):
        assert f"self.{attribute} = " in source, attribute


def test_overridden_and_called_methods_keep_their_signatures():
    assert parameters(mfusepy.FUSE.readdir_fuse_3) == READDIR_FUSE_3
    assert parameters(GitFSFUSE.readdir_fuse_3) == READDIR_FUSE_3
    assert parameters(mfusepy.FUSE._readdir) == READDIR_FUSE_3[:-1]
    assert parameters(mfusepy.set_st_attrs) == ["st", "attrs", "use_ns"]


def test_the_read_callback_gitfs_overrides():
    # GitFSFUSE.read replaces mfusepy's: same arguments, and libfuse's prototype hands a
    # pointer to the bytes of the buffer to fill.
    assert parameters(mfusepy.FUSE.read) == parameters(GitFSFUSE.read) == [
        "self", "path", "buf", "size", "offset", "fip"]
    fields = {field[0]: field[1] for field in mfusepy.fuse_operations._fields_}
    assert fields["read"]._argtypes_[1] == ctypes.POINTER(ctypes.c_byte)


def test_the_wrapper_and_opendir_gitfs_overrides():
    # GitFSFUSE._wrapper wraps mfusepy's (every callback goes through it, as partial(self._wrapper, method)).
    assert parameters(mfusepy.FUSE._wrapper) == ["self", "func", "args", "kwargs"]
    assert "functools.partial(self._wrapper, method)" in inspect.getsource(mfusepy.FUSE.__init__)
    # GitFSFUSE.opendir replaces mfusepy's, which takes the same arguments.
    assert parameters(mfusepy.FUSE.opendir) == parameters(GitFSFUSE.opendir) == ["self", "path", "fip"]


def test_the_libfuse_calls_kernel_cache_makes():
    # KernelCache: the struct fuse * from the context, and libfuse 3's invalidation calls.
    assert "fuse" in {field[0] for field in mfusepy.fuse_context._fields_}
    for symbol in ("fuse_get_context", "fuse_invalidate_path", "fuse_get_session",
                   "fuse_lowlevel_notify_inval_entry", "fuse_session_exited", "fuse_session_fd"):
        assert hasattr(mfusepy._libfuse, symbol), symbol


def test_the_kernel_cache_calls_libfuse_no_more_once_its_loop_has_ended():
    """libfuse frees the node table fuse_invalidate_path reads before it calls destroy: from
    the moment its session has exited (unmounted), nothing may reach libfuse any more."""
    if mfusepy.fuse_version_major != 3:
        pytest.skip("KernelCache notifies through libfuse 3 only")
    calls, exited = [], []
    kernel = KernelCache("/mnt")
    kernel._invalidate_path = lambda fuse, path: calls.append(("invalidate", path)) or (
        exited.append(1) if path == b"/current/b" else None)
    kernel._notify_inval_entry = lambda session, node, name, size: calls.append(("forget", name))
    kernel._session_exited = lambda session: 0  # libfuse clears it again once its loop is over
    read_end, write_end = os.pipe()  # the session's descriptor, connected until the unmount
    kernel._session_fd = lambda session: -1 if exited else read_end
    try:
        kernel._fuse, kernel._session = 1, 2  # as attach() in FUSE init
        kernel.invalidate(["/current/a", "/current/b", "/current/c"])  # unmounted during b
        kernel.forget_entries({"/current": 1}, ["/current/d"])
    finally:
        os.close(read_end)
        os.close(write_end)
    assert calls == [("invalidate", b"/current/a"), ("invalidate", b"/current/b")]
    assert not kernel.active


def test_a_fuse_descriptor_without_a_mount_counts_as_disconnected():
    """What the kernel answers poll on /dev/fuse with once the connection is gone (here: none
    was ever made); the descriptor libfuse sets to -1 when it unmounts."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing")
    fd = os.open("/dev/fuse", os.O_RDWR)
    try:
        assert _disconnected(fd)
    finally:
        os.close(fd)
    assert _disconnected(-1)
    read_end, write_end = os.pipe()
    try:
        assert not _disconnected(read_end)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_readdir_callback_and_filler_prototypes():
    fields = {field[0]: field[1] for field in mfusepy.fuse_operations._fields_}
    assert fields["readdir"]._argtypes_ == (
        ctypes.c_char_p, ctypes.c_void_p, mfusepy.fuse_fill_dir_t, mfusepy.c_off_t,
        ctypes.POINTER(mfusepy.fuse_file_info), ctypes.c_int)
    assert mfusepy.fuse_fill_dir_t._argtypes_ == (
        ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(mfusepy.c_stat), mfusepy.c_off_t, ctypes.c_int)


@pytest.mark.parametrize("struct, names", [
    # Router.init_with_config
    (mfusepy.fuse_config, {"entry_timeout", "attr_timeout", "negative_timeout", "auto_cache"}),
    (mfusepy.fuse_conn_info, {"want"}),
    # Router.open/create (raw_fi=True); noflush is optional (libfuse >= 3.11) and checked with hasattr
    (mfusepy.fuse_file_info, {"fh", "flags", "keep_cache", "direct_io", "cache_readdir"}),
    # what the views' stat dicts fill through set_st_attrs
    (mfusepy.c_stat, {"st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_atimespec",
                      "st_mtimespec", "st_ctimespec"}),
], ids=lambda value: getattr(value, "__name__", ""))
def test_struct_fields_gitfs_sets(struct, names):
    assert names <= {field[0] for field in struct._fields_}


def test_fill_stat_fills_what_mfusepy_s_set_st_attrs_fills():
    attrs = {"st_mode": 0o100644, "st_nlink": 2, "st_size": 3000, "st_blocks": 8, "st_ino": 42, "st_uid": 1000,
             "st_gid": 100, "st_atime": 1_700_000_000_123_456_789, "st_mtime": 1_600_000_000_000_000_001,
             "st_ctime": 1_650_000_000_999_999_999}
    ours, theirs = mfusepy.c_stat(), mfusepy.c_stat()
    fill_stat(ours, attrs)
    mfusepy.set_st_attrs(theirs, attrs, use_ns=True)
    assert bytes(ours) == bytes(theirs)
    assert (ours.st_mtimespec.tv_sec, ours.st_mtimespec.tv_nsec) == (1_600_000_000, 1)


def test_init_with_config_sets_only_fields_libfuse_reads():
    # A ctypes struct takes any attribute: one that is not a field is silently ignored by libfuse.
    config, conn = mfusepy.fuse_config(), mfusepy.fuse_conn_info()
    conn.want = FUSE_CAP_READDIRPLUS_AUTO | 1
    router = Router([], cache_size=1, touch=lambda: None, on_init=lambda: None, on_destroy=lambda: None,
                    disk_figures=dict)
    router.init_with_config(conn, config)
    assert vars(config) == {} and vars(conn) == {}
    timeouts = (config.entry_timeout, config.attr_timeout, config.negative_timeout)
    assert timeouts == (ENTRIES.seconds, ATTRIBUTES.seconds, 0)
    assert (config.auto_cache, config.ac_attr_timeout_set, config.ac_attr_timeout) == (1, 1, PAGES.seconds)
    assert conn.want == 1


def router_with(**options) -> Router:
    return Router([], cache_size=1, touch=lambda: None, on_init=lambda: None, on_destroy=lambda: None,
                  disk_figures=dict, **options)


def test_without_attributes_libfuse_gets_no_getxattr_and_a_refusal_is_told_once(caplog):
    # mfusepy hands libfuse no callback for what is None: the kernel's first getxattr gets
    # ENOSYS and it asks no more (an answered one costs a round trip per `ls -l` entry).
    router = router_with()
    assert (router.getxattr, router.listxattr, router.removexattr) == (None, None, None)
    with pytest.raises(mfusepy.FuseOSError) as refused:
        router.setxattr("/current/a", "security.x", b"1", 0)
    assert refused.value.errno == errno.EOPNOTSUPP  # not ENOSYS: a later user.* one still reaches us
    for _ in range(2):
        with pytest.raises(mfusepy.FuseOSError) as refused:
            router.setxattr("/current/a", "user.DOSATTRIB", b"1", 0)
        assert refused.value.errno == errno.ENOSYS
    told = [record for record in caplog.records if "-o xattr" in record.getMessage()]
    assert len(told) == 1 and told[0].levelname == "WARNING"
    kept = router_with(extended_attributes=True)
    assert callable(kept.getxattr) and callable(kept.listxattr) and callable(kept.removexattr)


# -- readdir_fuse_3 driven with mfusepy's own ctypes types -----------------------------

class Operations:
    """The two calls GitFSFUSE makes of the operations object, recorded."""

    use_ns = True

    def __init__(self, plus, names):
        self.plus, self.names, self.calls = plus, names, []

    def readdir_with_attrs(self, path, fh):
        self.calls.append(("readdir_with_attrs", path, fh))
        return self.plus

    def readdir(self, path, fh):
        self.calls.append(("readdir", path, fh))
        return self.names


def binding(operations) -> GitFSFUSE:
    """A GitFSFUSE without a mount: the attributes FUSE.__init__ sets, set by hand (pinned above)."""
    fuse = GitFSFUSE.__new__(GitFSFUSE)
    fuse.operations = operations
    fuse.encoding, fuse.errors = "utf-8", "surrogateescape"
    fuse.use_ns = operations.use_ns
    return fuse


class Filler:
    """A real fuse_fill_dir_t that records each entry; reports "buffer full" after `room` entries."""

    def __init__(self, room=1000):
        self.room, self.entries = room, []
        self.change_times: list[int] = []  # st_ctime of each entry filled with attributes
        self.callback = mfusepy.fuse_fill_dir_t(self._fill)

    def _fill(self, buf, name, st, offset, flags):
        if len(self.entries) >= self.room:
            return 1
        stat = None
        if st:
            contents = st.contents
            stat = (contents.st_mode, contents.st_size, contents.st_mtimespec.tv_sec, contents.st_mtimespec.tv_nsec)
            self.change_times.append(contents.st_ctimespec.tv_sec)
        self.entries.append((name.decode(), stat, offset, flags))
        return 0


def file_info(fh: int):
    info = mfusepy.fuse_file_info()
    info.fh = fh
    return ctypes.pointer(info)


ATTRS = {"st_mode": 0o40555, "st_size": 4096, "st_mtime": 1_700_000_000_123_456_789, "st_nlink": 2}
PLUS = [(".", ATTRS), ("..", None), ("2026-12-03", ATTRS), "plain-name", ("éte", {**ATTRS, "st_size": 7})]


def test_readdirplus_fills_attributes_and_positions():
    operations = Operations(PLUS, [])
    filler = Filler()
    assert binding(operations).readdir_fuse_3(b"/history", None, filler.callback, 0, file_info(7),
                                              FUSE_READDIR_PLUS) == 0
    stat = (0o40555, 4096, 1_700_000_000, 123_456_789)
    assert filler.entries == [
        (".", stat, 1, FUSE_FILL_DIR_PLUS),
        ("..", None, 2, 0),
        ("2026-12-03", stat, 3, FUSE_FILL_DIR_PLUS),
        ("plain-name", None, 4, 0),
        ("éte", (0o40555, 7, 1_700_000_000, 123_456_789), 5, FUSE_FILL_DIR_PLUS),
    ]
    assert operations.calls == [("readdir_with_attrs", "/history", 7)]


def test_readdirplus_entries_with_a_type_only_carry_it_without_attributes():
    operations = Operations([(".", stat.S_IFDIR), ("file", stat.S_IFREG), ("link", stat.S_IFLNK)], [])
    filler = Filler()
    binding(operations).readdir_fuse_3(b"/current", None, filler.callback, 0, file_info(3), FUSE_READDIR_PLUS)
    assert filler.entries == [  # no FUSE_FILL_DIR_PLUS: libfuse passes the mode on as d_type only
        (".", (stat.S_IFDIR, 0, 0, 0), 1, 0),
        ("file", (stat.S_IFREG, 0, 0, 0), 2, 0),
        ("link", (stat.S_IFLNK, 0, 0, 0), 3, 0),
    ]


def test_a_full_buffer_resumes_at_the_offset_asked_from_the_kept_listing():
    operations = Operations(PLUS, [])
    fuse = binding(operations)
    first = Filler(room=2)
    fuse.readdir_fuse_3(b"/history", None, first.callback, 0, file_info(7), FUSE_READDIR_PLUS)
    assert [entry[0] for entry in first.entries] == [".", ".."]
    rest = Filler()
    fuse.readdir_fuse_3(b"/history", None, rest.callback, 2, file_info(7), FUSE_READDIR_PLUS)
    assert [(entry[0], entry[2]) for entry in rest.entries] == [("2026-12-03", 3), ("plain-name", 4), ("éte", 5)]
    assert operations.calls == [("readdir_with_attrs", "/history", 7)]  # the second call used the kept listing


def test_a_listing_is_let_go_by_the_call_that_finds_its_end():
    """The kernel reads a folder until a call fills nothing: that call drops the kept
    listing (a listing of 300,000 versions with attributes held ~270 MB until 16 other
    folders had been listed)."""
    operations = Operations(PLUS, [])
    fuse = binding(operations)
    first = Filler(room=3)
    fuse.readdir_fuse_3(b"/history", None, first.callback, 0, file_info(7), FUSE_READDIR_PLUS)
    fuse.readdir_fuse_3(b"/history", None, Filler().callback, 3, file_info(7), FUSE_READDIR_PLUS)
    assert fuse._listings == {"/history": PLUS}  # the last entries were read, the end not yet found
    end = Filler()
    fuse.readdir_fuse_3(b"/history", None, end.callback, len(PLUS), file_info(7), FUSE_READDIR_PLUS)
    assert end.entries == [] and fuse._listings == {}
    assert operations.calls == [("readdir_with_attrs", "/history", 7)]


class MadeWhenRead:
    """A listing whose entries are made as the binding reads them, each with attributes of
    its own that nothing else holds (the versions of a file: views/versions.py)."""

    def __init__(self, sizes):
        self.sizes = sizes

    def __len__(self):
        return len(self.sizes)

    def __getitem__(self, number):
        return f"v{number}", {"st_mode": 0o100444, "st_size": self.sizes[number], "st_nlink": 1}


def test_entries_made_when_read_each_keep_their_own_attributes():
    sizes = list(range(100, 400))
    filler = Filler()
    binding(Operations(MadeWhenRead(sizes), [])).readdir_fuse_3(b"/.gitfs/versions/f", None, filler.callback, 0,
                                                                file_info(1), FUSE_READDIR_PLUS)
    assert [entry[1][1] for entry in filler.entries] == sizes  # no struct filled for a freed dict served another


class Reader:
    """The read call GitFSFUSE makes of the operations object, answering `data`."""

    use_ns = True

    def __init__(self, data):
        self.data, self.calls = data, []

    def read(self, path, size, offset, fh):
        self.calls.append((path, size, offset, fh))
        return self.data


@pytest.mark.parametrize("data", [b"0123456789", memoryview(b"xx0123456789xx")[2:12], b""],
                         ids=["bytes", "memoryview", "end of file"])
def test_read_fills_libfuses_buffer(data):
    reader = Reader(data)
    fuse = binding(reader)
    fuse.raw_fi = False
    buffer = (ctypes.c_byte * 16)(*([-1] * 16))
    count = fuse.read(b"/history/f", ctypes.cast(buffer, ctypes.POINTER(ctypes.c_byte)), 16, 4096, file_info(9))
    assert count == len(data)
    assert bytes(buffer)[:count] == bytes(data)
    assert bytes(buffer)[count:] == b"\xff" * (16 - count)  # nothing written past what was read
    assert reader.calls == [("/history/f", 16, 4096, 9)]


def test_reads_of_many_lengths_make_no_new_ctypes_classes():
    """A small file's first read answers its length: one ctypes class per length asked
    of the buffer's (the kernel's few request sizes), not per length answered."""
    def array_classes():
        return sum(1 for thing in gc.get_objects() if isinstance(thing, type) and issubclass(thing, ctypes.Array))

    buffer = (ctypes.c_byte * 4096)()
    pointer = ctypes.cast(buffer, ctypes.POINTER(ctypes.c_byte))
    payload = memoryview(bytes(range(256)) * 16)
    def read(length):
        fuse = binding(Reader(payload[:length]))
        fuse.raw_fi = False
        assert fuse.read(b"/f", pointer, 4096, 0, file_info(1)) == length
        assert bytes(buffer)[:length] == bytes(payload[:length])

    read(4096)  # what one read of this buffer size makes, once
    gc.disable()  # an unreferenced class lingers until a collection: count every one made
    try:
        before = array_classes()
        for length in range(1, 201):
            read(length)
        made = array_classes() - before
    finally:
        gc.enable()
    assert made == 0


def test_read_refuses_more_bytes_than_asked():
    fuse = binding(Reader(memoryview(b"0123456789")))
    fuse.raw_fi = False
    buffer = (ctypes.c_byte * 4)()
    with pytest.raises(ValueError):
        fuse.read(b"/f", ctypes.cast(buffer, ctypes.POINTER(ctypes.c_byte)), 4, 0, file_info(1))
    assert bytes(buffer) == b"\0" * 4


def test_plain_readdir_goes_through_mfusepys_own_readdir():
    operations = Operations(PLUS, [".", "..", "file"])
    filler = Filler()
    assert binding(operations).readdir_fuse_3(b"/current", None, filler.callback, 0, file_info(3), 0) == 0
    assert [(name, offset, flags) for name, _stat, offset, flags in filler.entries] == [
        (".", 0, 0), ("..", 0, 0), ("file", 0, 0)]
    assert operations.calls == [("readdir", "/current", 3)]


def test_stamped_entries_carry_the_template_with_their_own_times():
    template = {"st_mode": 0o40555, "st_size": 4096, "st_nlink": 2, "st_atime": 0, "st_mtime": 0, "st_ctime": 0}
    plus = [(".", None), ("10-00-00-aaaaaaaaaa", StampedStat(template, 1_700_000_000)),
            ("10-00-01-bbbbbbbbbb", StampedStat(template, 1_700_000_001)), ("other", {**template, "st_size": 9})]
    filler = Filler()
    binding(Operations(plus, [])).readdir_fuse_3(b"/history/d", None, filler.callback, 0, file_info(1),
                                                 FUSE_READDIR_PLUS)
    assert filler.entries == [  # one struct serves both stamped entries: each is filled with its own time
        (".", None, 1, 0),
        ("10-00-00-aaaaaaaaaa", (0o40555, 4096, 1_700_000_000, 0), 2, FUSE_FILL_DIR_PLUS),
        ("10-00-01-bbbbbbbbbb", (0o40555, 4096, 1_700_000_001, 0), 3, FUSE_FILL_DIR_PLUS),
        ("other", (0o40555, 9, 0, 0), 4, FUSE_FILL_DIR_PLUS),
    ]


def test_a_templates_struct_is_filled_once_for_every_call_and_copied_per_call():
    """The templates of commit folders' entries live as long as the mount (views/blob.py):
    their structs are filled once, and every call sets the times on a copy of its own."""
    template = {"st_mode": 0o100444, "st_size": 12, "st_nlink": 1, "st_atime": 0, "st_mtime": 0, "st_ctime": 0}
    fuse = binding(Operations([("a.txt", StampedStat(template, 1_700_000_000))], []))
    first = Filler()
    fuse.readdir_fuse_3(b"/history/d/c", None, first.callback, 0, file_info(1), FUSE_READDIR_PLUS)
    kept = fuse._template_structs[id(template)]
    assert kept[0] is template  # held: its id() names no other template while the struct is kept
    fuse.operations = Operations([("b.txt", StampedStat(template, 1_700_000_009))], [])
    second = Filler()
    fuse.readdir_fuse_3(b"/history/d/e", None, second.callback, 0, file_info(1), FUSE_READDIR_PLUS)
    assert fuse._template_structs == {id(template): kept}
    assert (first.entries[0][1], second.entries[0][1]) == ((0o100444, 12, 1_700_000_000, 0),
                                                           (0o100444, 12, 1_700_000_009, 0))
    assert kept[1].st_mtimespec.tv_sec == 0  # the kept struct itself never carries a call's times


def test_a_stamped_entry_may_have_its_own_change_time():
    template = {"st_mode": 0o40555, "st_size": 4096, "st_nlink": 2, "st_atime": 0, "st_mtime": 0, "st_ctime": 0}
    plus = [("2026-12-01", StampedStat(template, 1_700_000_500, 1_700_000_000)),
            ("2026-12-02", StampedStat(template, 1_700_090_000))]
    filler = Filler()
    binding(Operations(plus, [])).readdir_fuse_3(b"/history", None, filler.callback, 0, file_info(1),
                                                 FUSE_READDIR_PLUS)
    assert [entry[1][2] for entry in filler.entries] == [1_700_000_500, 1_700_090_000]
    assert filler.change_times == [1_700_000_000, 1_700_090_000]
    assert StampedStat(template, 7, 3) == {**template, "st_atime": 7 * 10**9, "st_mtime": 7 * 10**9,
                                           "st_ctime": 3 * 10**9}


def test_a_stamped_stat_reads_as_the_dict_it_stands_for():
    template = {"st_mode": 0o40555, "st_nlink": 2, "st_atime": 0, "st_mtime": 0, "st_ctime": 0}
    assert StampedStat(template, 5) == {**template, "st_atime": 5 * 10**9, "st_mtime": 5 * 10**9,
                                        "st_ctime": 5 * 10**9}
