"""Git LFS: the commit holds a small pointer, the content lives in an object store.

libgit2 runs no clean/smudge filters, so GitFS speaks LFS itself. This package holds
everything LFS knows, so that the rest of the code does not need to:

  pointer.py     the pointer text: lenient parse, canonical write, extensions refused
  store.py       an object store in git-lfs's layout (OID[0:2]/OID[2:4]/OID), written by
                 streaming copies that hash as they go; a clone's .git/lfs and a path
                 remote's standalone lfs/ folder are both one
  attributes.py  which paths are LFS (filter=lfs in the attributes in effect)
  endpoint.py    where the objects are, and whether the remote's credentials may go there
  transfer.py    moving objects: the Transfer protocol, a path remote's StandaloneTransfer
  http.py        HttpTransfer: an LFS server's batch API and basic transfer
  ssh.py         an SSH remote's endpoint and token from git-lfs-authenticate
  setup.py       which of these a mount uses
"""
