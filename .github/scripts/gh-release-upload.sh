#!/usr/bin/env bash
# Upload one component's laid-out asset set to its GitHub prerelease, never replacing an asset.
#
#   gh-release-upload.sh TAG DIR [--draft]
#
# DIR holds the set exactly as `ninfer-release publish --to files://…` laid it out (DIR = ROOT/TAG:
# verified, within the asset budget). The release TAG is created as a prerelease (and a draft with
# --draft) when it does not exist. An asset already on the release must have the same bytes as the
# file in DIR (downloaded and compared); other bytes stop the step (exit 7) — a published asset is
# immutable, like a tag. Missing assets are uploaded with `gh release upload` (no --clobber).
# Needs gh with GH_TOKEN and GH_REPO; it cannot run outside GitHub Actions (docs/publishing.md).
set -euo pipefail
tag=$1
dir=$2
draft=${3:-}
[ -f "$dir/SHA256SUMS" ] || { echo "error: $dir: no laid-out asset set (SHA256SUMS missing)" >&2; exit 4; }
if ! gh release view "$tag" >/dev/null 2>&1; then
  flags=(--prerelease --title "$tag" --notes "Component $tag: the 11-file asset set. Verify with: ninfer-release verify <download URL of this tag>/")
  [ "$draft" = "--draft" ] && flags+=(--draft)
  gh release create "$tag" "${flags[@]}" --target "${GITHUB_SHA:-HEAD}"
fi
existing=$(gh release view "$tag" --json assets --jq '.assets[].name')
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
upload=()
for path in "$dir"/*; do
  name=$(basename "$path")
  if grep -qxF "$name" <<<"$existing"; then
    gh release download "$tag" --pattern "$name" --dir "$check" --clobber
    if ! cmp -s "$check/$name" "$path"; then
      echo "error: release $tag: asset $name already exists with other bytes; refusing to replace it" >&2
      exit 7
    fi
  else
    upload+=("$path")
  fi
done
if [ ${#upload[@]} -gt 0 ]; then
  gh release upload "$tag" "${upload[@]}"
fi
echo "$tag: ${#upload[@]} uploaded, $(( $(ls "$dir" | wc -l) - ${#upload[@]} )) already there with the same bytes"
