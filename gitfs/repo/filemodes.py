"""Git's file modes and the names GitFS gives meaning to in a working tree."""

KEEP_FILE = ".keep"  # holds an otherwise empty folder in git
GIT_DIR = ".git"

FILEMODE_TREE = 0o040000
FILEMODE_BLOB = 0o100644
FILEMODE_EXEC = 0o100755
FILEMODE_LINK = 0o120000
FILEMODE_COMMIT = 0o160000  # a submodule entry
BLOB_MODES = frozenset((FILEMODE_BLOB, FILEMODE_EXEC, FILEMODE_LINK))  # entries whose content is a blob
