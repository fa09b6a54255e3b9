"""How the web annotator shows an item: its name, text, context, or the image file it names (served only from
regular image files under one folder, checked at every open)."""

from __future__ import annotations

import html
import os
import stat
from pathlib import Path
from typing import Any

from jaxclust.active.oracles import item_label, shorten
from jaxclust.apps.items import Items

__all__ = ["ItemView", "IMAGE_SUFFIXES", "MAX_IMAGE"]

#: An item whose text, context or name is a path to an existing file with one of these suffixes is shown as
#: that image.
IMAGE_SUFFIXES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif"}
#: Largest image served (bytes).
MAX_IMAGE = 32 * 1024 * 1024


class ItemView:
    """How items are shown: name, text, context and image of item ``k``.

    Images: an item whose text, context or name names an image file (:data:`IMAGE_SUFFIXES`) under ``root`` (the
    data file's folder by default, else the working directory) is shown as that image. Only regular files whose
    real path lies under ``root`` and whose content is a PNG, JPEG or GIF are served, checked again at every open
    (:meth:`image_bytes`): a file replaced by a link after start is not followed out of the folder."""

    def __init__(self, items: Items, max_chars: int | None = 600, root: str | Path | None = None):
        self.items, self.max_chars = items, max_chars
        if root is None:
            root = items.source.parent if items.source is not None else Path.cwd()
        self.root = Path(os.path.realpath(root))
        self.images: dict[int, Path] = {}
        for values in (items.texts, items.contexts, items.names):
            for k, v in enumerate(values or ()):
                path = Path(str(v).strip())
                if k in self.images or path.suffix.lower() not in IMAGE_SUFFIXES or len(str(v)) > 4096:
                    continue
                path = path if path.is_absolute() else self.root / path
                if self._inside(os.path.realpath(path)) and os.path.isfile(path):
                    self.images[k] = path

    def _inside(self, real: str) -> bool:
        return Path(real).is_relative_to(self.root) and Path(real) != self.root

    def image_bytes(self, k: int) -> tuple[bytes, str] | None:
        """Item ``k``'s image and its media type, read now; None unless it is a regular PNG, JPEG or GIF file of
        at most :data:`MAX_IMAGE` bytes whose real path lies under ``root``."""
        path = self.images.get(k)
        if path is None:
            return None
        real = os.path.realpath(path)
        if not self._inside(real):
            return None
        try:
            fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(fd)
            proc = f"/proc/self/fd/{fd}"  # the file opened, whatever the path's folders turned into meanwhile
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_IMAGE:
                return None
            if os.path.exists(proc) and not self._inside(os.readlink(proc)):
                return None
            data = f.read(MAX_IMAGE + 1)
        kind = _image_type(data)
        return None if kind is None or len(data) > MAX_IMAGE else (data, kind)

    def html(self, k: int) -> str:
        it = self.items
        parts = [f"<div class=name>{html.escape(item_label(it.names, k, 200))}</div>"]
        if k in self.images:
            parts.append(f"<img class=item src='/item/{k}/image' alt='{html.escape(self.images[k].name)}'>")
        if it.texts is not None and k not in self.images:
            parts.append(f"<div class=text>{html.escape(shorten(it.texts[k], self.max_chars))}</div>")
        if it.contexts is not None and it.contexts[k] and k not in self.images:
            parts.append(f"<div class=context>{html.escape(shorten(it.contexts[k], self.max_chars))}</div>")
        if it.texts is None and it.contexts is None and it.X is not None:
            cols = it.columns or [f"x{c}" for c in range(it.X.shape[1])]
            vals = ", ".join(f"{c}={v:.3g}" for c, v in zip(cols[:8], it.X[k, :8], strict=False))
            parts.append(f"<div class=context>{html.escape(vals)}</div>")
        return "".join(parts)

    def plain(self, k: int) -> dict[str, Any]:
        it = self.items
        return {
            "index": k,
            "name": it.names[k],
            "text": None if it.texts is None else it.texts[k],
            "context": None if it.contexts is None else it.contexts[k],
            "image": f"/item/{k}/image" if k in self.images else None,
        }


def _image_type(data: bytes) -> str | None:
    """The media type of a PNG, JPEG or GIF file's bytes, by their signature; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    return None
