"""Typed errors of the git core; views turn them into errno values."""


class GitCoreError(Exception):
    pass


class PathNotFound(GitCoreError):
    pass


class NotADirectory(GitCoreError):
    pass


class RemoteError(GitCoreError):
    """Fetch, push or clone failed; the message says why in words."""


class PushRejected(RemoteError):
    """The remote refused the update (moved meanwhile, or a hook said no)."""


class SettingError(GitCoreError):
    """A local file or option the git core cannot use: a key, a password file, an ignore file."""
