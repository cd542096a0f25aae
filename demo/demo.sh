#!/usr/bin/env bash
# GitFS demo on a fresh Debian 12 machine (as root): make a small remote, mount it,
# browse current/ and history/, write a file and watch GitFS commit and push it.
#   bash demo/demo.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEMO=/tmp/gitfs-demo
REMOTE=$DEMO/remote.git
MNT=$DEMO/mnt
CLONE=$DEMO/clone
LOG=$DEMO/gitfs.log
NEW_FILE=hello-from-gitfs.txt

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
heading() { printf '\n%s==> %s%s\n' "$bold" "$*" "$plain"; }
show() { printf '$ %s\n' "$*"; "$@"; }

# /proc/mounts rather than `mountpoint`: a mount whose daemon died fails stat (ENOTCONN).
is_mounted() { grep -qs " $1 fuse" /proc/mounts; }
unmount() { fusermount3 -u "$1" 2>/dev/null || fusermount -u "$1" 2>/dev/null || umount "$1"; }

mounted=0
on_exit() {
    local status=$?
    if [ "$status" -ne 0 ] && [ "$mounted" = 1 ]; then
        echo "demo failed; last lines of $LOG:" >&2
        tail -n 30 "$LOG" >&2 || true
        unmount "$MNT" || true
    fi
}
trap on_exit EXIT

heading "Installing what GitFS needs to run (.ci/install-deps --runtime)"
bash "$ROOT/.ci/install-deps" --runtime

heading "Cleaning up any previous demo in $DEMO"
if is_mounted "$MNT"; then
    unmount "$MNT" || fusermount3 -u -z "$MNT" || umount -l "$MNT"
fi
rm -rf "$DEMO"
mkdir -p "$DEMO" "$MNT"

heading "Creating a bare remote with 3 commits: $REMOTE"
# Fixed identity and no signing, whatever the user's git config says.
seed=$DEMO/seed
g() { git -C "$seed" -c user.name=Demo -c user.email=demo@example.com -c commit.gpgsign=false "$@"; }
git init -q --bare --initial-branch=main "$REMOTE"
git init -q --initial-branch=main "$seed"
printf '# Demo project\n\nHello from a Git remote mounted with GitFS.\n' > "$seed/README.md"
g add -A && g commit -q -m "Add README"
mkdir -p "$seed/docs"
printf 'Edit files under current/; every change becomes a commit.\n' > "$seed/docs/guide.md"
printf 'buy milk\n' > "$seed/notes.txt"
g add -A && g commit -q -m "Add guide and notes"
printf 'buy milk\nwrite the demo\n' > "$seed/notes.txt"
g add -A && g commit -q -m "Update notes"
g push -q "$REMOTE" main
rm -rf "$seed"
show git -C "$REMOTE" log --oneline

heading "Mounting it on $MNT"
cd "$ROOT"
show python3 -m gitfs "$REMOTE" "$MNT" \
    -o "repo_path=$CLONE,sync_timeout=1,fetch_timeout=2,log=$LOG"
mounted=1
for _ in $(seq 50); do is_mounted "$MNT" && break; sleep 0.2; done
is_mounted "$MNT" || { echo "GitFS did not mount $MNT" >&2; exit 1; }

heading "The mount: current/ is the branch, history/ has one read-only folder per commit"
show ls "$MNT"
show ls "$MNT/current"
show cat "$MNT/current/README.md"

heading "history/ (first 20 lines of ls -R)"
# Captured first: `ls -R | head` would die of SIGPIPE under pipefail.
listing=$(ls -R "$MNT/history")
head -n 20 <<<"$listing"

heading "Writing current/$NEW_FILE"
line="Hello from GitFS, $(date)"
echo "\$ echo '$line' > $MNT/current/$NEW_FILE"
echo "$line" > "$MNT/current/$NEW_FILE"

heading "Waiting for GitFS to commit and push it (up to 20 s)"
pushed=0
for _ in $(seq 40); do
    subject=$(git -C "$REMOTE" log -1 --format=%s 2>/dev/null || true)
    case "$subject" in
        *"/$NEW_FILE"*) pushed=1; break ;;
    esac
    sleep 0.5
done
if [ "$pushed" != 1 ]; then
    echo "the remote did not get the commit within 20 s (last subject: ${subject:-none})" >&2
    exit 1
fi
echo "pushed: $subject"

heading "The remote's log"
show git -C "$REMOTE" log --format='%h  %ad  %an  %s' --date=format:'%Y-%m-%d %H:%M:%S'

heading "Unmounting"
if command -v fusermount3 >/dev/null; then show fusermount3 -u "$MNT"; else show fusermount -u "$MNT"; fi
mounted=0

heading "Done. Everything is under $DEMO:"
cat <<EOT
  remote.git   the bare remote:   git -C $REMOTE log
  clone/       GitFS's working clone (repo_path)
  mnt/         the mount point; mount again with:
                 python3 -m gitfs $REMOTE $MNT -o repo_path=$CLONE
  gitfs.log    the daemon's log
EOT
