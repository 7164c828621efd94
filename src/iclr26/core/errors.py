"""The harness's user-facing errors: what the command line prints as one clear line (everything else gets a traceback).

Raise :class:`UserError` for a problem the user can fix (a bad argument, a missing file, an unwritable folder) with a
message that names the problem and the fix. A bug deep in a paper (a ``KeyError`` in a method, say) must not be one:
the command line shows its traceback.
"""

from __future__ import annotations


class UserError(ValueError):
    """A problem the user can fix; the message names it and the fix."""


def unwritable(path, exc: OSError) -> UserError:
    """A clear error for a write that failed (read-only folder, full disk, no permission), naming the folder."""
    import errno

    why = {
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is exhausted",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
    }.get(exc.errno, exc.strerror or str(exc))
    return UserError(
        f"cannot write to {path}: {why}. Free space or fix the permissions, or choose another folder "
        "(--runs for run folders, --report for the report, ICLR26_CACHE for the model cache)."
    )
