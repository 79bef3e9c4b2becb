"""_sanitizer -- keeps torch.profiler metadata from corrupting the trace.

Upstream ``_KinetoProfile.add_metadata`` escapes ``"`` as ``\\"`` but not
backslashes, and kineto's writer then turns every ``\\`` into ``/`` and
writes keys unescaped: one quote, backslash or control character in a key
or value makes the whole ``export_chrome_trace`` file unparseable. This
module patches ``add_metadata`` and ``add_metadata_json`` with exactly the
semantics of torch_npu's ``_add_metadata_sanitizer_patch`` (see
shared/reference/torch_npu-behaviours.md section 3):

* ``"`` -> ``'``, ``\\`` -> ``/``, every character below U+0020 -> space;
  nothing else changes (DEL, U+2028 and non-ASCII pass through);
* notes ``"<count> <description>"``, one per distinct replaced character,
  sorted by code point;
* keys are sanitised too; each altered key or value raises one
  ``UserWarning`` that says what was altered and why;
* the JSON variant parses the text, sanitises every string (dict keys
  included) and re-serialises with ``ensure_ascii=False``; text that is not
  JSON is sanitised as plain text;
* applying the patch twice is harmless.

The same :func:`sanitize_value` is what the torch plugin applies to every
string it hands kineto (plugins/torch).
"""

import functools
import json
import warnings

_DESCRIPTIONS = {
    '"': "double quote",
    "\\": "backslash",
    "\n": "newline",
    "\r": "carriage return",
    "\t": "tab",
    "\b": "backspace",
    "\f": "form feed",
}

_PATCHED_FLAG = "_acceltrace_metadata_sanitized"


def _replacement(ch):
    """The safe character for ``ch``, or None when ``ch`` is safe."""
    if ch == '"':
        return "'"
    if ch == "\\":
        return "/"
    if ch < " ":
        return " "
    return None


def _describe(ch):
    return _DESCRIPTIONS.get(ch) or "control character U+%04X" % ord(ch)


def sanitize_value(value):
    """``(safe_str, notes)`` for a plain value (non-str values go through
    ``str()`` first). ``notes`` is empty, and the text returned unchanged,
    when nothing needed replacing."""
    text = value if isinstance(value, str) else str(value)
    counts = {}
    out = []
    for ch in text:
        rep = _replacement(ch)
        if rep is None:
            out.append(ch)
        else:
            counts[ch] = counts.get(ch, 0) + 1
            out.append(rep)
    if not counts:
        return text, []
    notes = ["%d %s" % (counts[ch], _describe(ch)) for ch in sorted(counts)]
    return "".join(out), notes


def sanitize_json_value(value):
    """``(safe_str, notes)`` for a JSON text: every string in the document
    (dict keys too) is sanitised and the document re-serialised; text that
    does not parse is sanitised as plain text (and not wrapped in quotes)."""
    text = value if isinstance(value, str) else str(value)
    try:
        doc = json.loads(text)
    except (ValueError, TypeError):
        return sanitize_value(text)
    notes = []

    def walk(node):
        if isinstance(node, str):
            safe, n = sanitize_value(node)
            notes.extend(n)
            return safe
        if isinstance(node, list):
            return [walk(item) for item in node]
        if isinstance(node, dict):
            return {walk(k): walk(v) for k, v in node.items()}
        return node

    safe_doc = walk(doc)
    return json.dumps(safe_doc, ensure_ascii=False), notes


def warning_text(api, key, what, notes):
    """The wording of the warning for an altered key or value."""
    return ("%s(%r): the %s contained characters that cannot survive the trace "
            "writer and was altered (%s). Writing it unchanged would produce an "
            "unparseable trace file." % (api, key, what, ", ".join(notes)))


def _warn(api, key, what, notes):
    # stacklevel 3: _warn -> the wrapper -> the user's call site.
    warnings.warn(warning_text(api, key, what, notes), UserWarning, stacklevel=3)


def _wrap(api, original, sanitize):
    @functools.wraps(original)
    def wrapper(self, key, value):
        safe_key, key_notes = sanitize_value(key)
        if key_notes:
            _warn(api, key, "key", key_notes)
        safe_value, value_notes = sanitize(value)
        if value_notes:
            _warn(api, key, "value", value_notes)
        return original(self, safe_key, safe_value)
    return wrapper


def apply_metadata_sanitizer_patch():
    """Patch ``torch.profiler.profiler._KinetoProfile``; idempotent. Returns
    True when the class is (now or already) patched, False when this torch
    has no such class (then nothing is done, silently, as in torch_npu)."""
    try:
        from torch.profiler.profiler import _KinetoProfile
    except ImportError:
        return False
    if getattr(_KinetoProfile, _PATCHED_FLAG, False):
        return True
    _KinetoProfile.add_metadata = _wrap("add_metadata", _KinetoProfile.add_metadata,
                                        sanitize_value)
    _KinetoProfile.add_metadata_json = _wrap("add_metadata_json",
                                             _KinetoProfile.add_metadata_json,
                                             sanitize_json_value)
    setattr(_KinetoProfile, _PATCHED_FLAG, True)
    return True
