"""The metadata sanitiser patch (acceltrace.torch._sanitizer) against torch
2.13: the twenty behaviours of torch_npu's test_metadata_sanitizer.py
(shared/reference/torch_npu-behaviours.md section 3.5), plus the exact
wording, note order and edge cases of section 3.3/3.4."""

import json
import os
import tempfile
import warnings

import pytest

torch = pytest.importorskip("torch")

from torch.profiler import ProfilerActivity, profile  # noqa: E402

from acceltrace.torch import _sanitizer  # noqa: E402
from acceltrace.torch._sanitizer import (  # noqa: E402
    apply_metadata_sanitizer_patch, sanitize_json_value, sanitize_value)


def _upstream_wrap(value):
    """How upstream add_metadata wraps a value before add_metadata_json."""
    return '"' + value.replace('"', '\\"') + '"'


def _profile_with(calls):
    """Profile some CPU work with ``calls(prof)`` made while recording;
    returns (raw trace text, texts of 'altered' UserWarnings)."""
    prof = profile(activities=[ProfilerActivity.CPU])
    prof.start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calls(prof)
    warned = [str(w.message) for w in caught
              if issubclass(w.category, UserWarning) and "altered" in str(w.message)]
    a = torch.randn(32, 32)
    for _ in range(3):
        a = a @ a
        a = a / a.norm()
    prof.stop()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as f:
            raw = f.read()
    finally:
        os.unlink(path)
    return raw, warned


# ---- TestMetadataSanitizerValues --------------------------------------------

class TestMetadataSanitizerValues:
    def test_clean_value_is_untouched(self):
        assert sanitize_value("plain value") == ("plain value", [])

    def test_quotes_are_replaced_and_reported(self):
        safe, notes = sanitize_value('has "quotes" inside')
        assert '"' not in safe
        assert any("double quote" in n for n in notes)

    def test_backslashes_are_replaced(self):
        safe, _ = sanitize_value("C:\\temp\\file")
        assert "\\" not in safe

    def test_control_characters_are_replaced(self):
        safe, _ = sanitize_value("line\nbreak\tand tab")
        assert "\n" not in safe and "\t" not in safe

    def test_non_ascii_survives(self):
        assert sanitize_value("你好") == ("你好", [])

    def test_sanitised_values_survive_upstream_wrapping(self):
        for value in ['has "quotes" inside', "C:\\temp\\file", "line\nbreak\tand tab",
                      "\x00\x1f\x7f", 'mix "\\\r\b\f', "你好"]:
            safe, _ = sanitize_value(value)
            json.loads(_upstream_wrap(safe))


# ---- TestMetadataSanitizerJson ----------------------------------------------

class TestMetadataSanitizerJson:
    def test_clean_json_keeps_its_meaning(self):
        safe, notes = sanitize_json_value('{"run": 7, "tags": ["a", "b"]}')
        assert json.loads(safe) == {"run": 7, "tags": ["a", "b"]}
        assert notes == []

    def test_quoted_string_inside_json_is_sanitised(self):
        safe, _ = sanitize_json_value(json.dumps({"k": 'say "hi"'}))
        assert "\\" not in safe
        assert '"' not in json.loads(safe)["k"]

    def test_nested_structures_are_walked(self):
        safe, notes = sanitize_json_value(json.dumps({"outer": {"inner": ['a "quoted" item']}}))
        assert json.loads(safe) == {"outer": {"inner": ["a 'quoted' item"]}}
        assert notes

    def test_non_json_falls_back_to_plain_sanitising(self):
        assert sanitize_json_value("not json at all") == ("not json at all", [])


# ---- TestMetadataSanitizerAgainstExport -------------------------------------

class TestMetadataSanitizerAgainstExport:
    @classmethod
    def setup_class(cls):
        # Applying the patch twice must be harmless.
        assert apply_metadata_sanitizer_patch()
        first = profile.add_metadata
        assert apply_metadata_sanitizer_patch()
        assert profile.add_metadata is first

    def test_underlying_defect_is_still_present(self):
        def calls(prof):
            torch.autograd._add_metadata_json("quoted", _upstream_wrap('has "quotes" inside'))
        raw, _ = _profile_with(calls)
        with pytest.raises(ValueError):
            json.loads(raw)

    def test_trace_parses_with_a_quoted_value(self):
        raw, _ = _profile_with(lambda p: p.add_metadata("quoted", 'has "quotes" inside'))
        assert "traceEvents" in json.loads(raw)

    def test_metadata_key_and_value_reach_the_trace(self):
        raw, _ = _profile_with(lambda p: p.add_metadata("quoted", 'has "quotes" inside'))
        trace = json.loads(raw)
        assert "quoted" in trace
        assert "quotes" in trace["quoted"]

    def test_json_metadata_reaches_the_trace(self):
        doc = json.dumps({"path": "C:\\data", "note": 'a "b" c'})
        raw, _ = _profile_with(lambda p: p.add_metadata_json("doc", doc))
        trace = json.loads(raw)
        assert "doc" in trace
        assert trace["doc"] == {"path": "C:/data", "note": "a 'b' c"}

    def test_the_user_is_warned_when_a_value_is_altered(self):
        _, warned = _profile_with(lambda p: p.add_metadata("quoted", 'has "quotes" inside'))
        assert len(warned) >= 1

    def test_a_key_containing_a_quote_does_not_corrupt_the_trace(self):
        raw, warned = _profile_with(lambda p: p.add_metadata('bad"key', "clean value"))
        trace = json.loads(raw)
        assert 'bad"key' not in trace
        assert any("key" in w for w in warned)
        keys = [k for k in trace if k.startswith("bad") and k.endswith("key")]
        assert len(keys) == 1
        assert trace[keys[0]] == "clean value"

    def test_a_key_containing_a_backslash_does_not_corrupt_the_trace(self):
        raw, _ = _profile_with(lambda p: p.add_metadata("bad\\key", "clean value"))
        trace = json.loads(raw)
        assert "bad\\key" not in trace

    def test_a_bad_key_on_the_json_variant_is_sanitised(self):
        raw, warned = _profile_with(lambda p: p.add_metadata_json('bad"key', '"clean value"'))
        trace = json.loads(raw)
        assert 'bad"key' not in trace
        assert any("key" in w for w in warned)
        keys = [k for k in trace if k.startswith("bad") and k.endswith("key")]
        assert len(keys) == 1
        assert trace[keys[0]] == "clean value"

    def test_a_clean_key_is_untouched(self):
        raw, warned = _profile_with(lambda p: p.add_metadata("clean_key", "clean value"))
        assert json.loads(raw)["clean_key"] == "clean value"
        assert warned == []

    def test_a_clean_value_raises_no_warning(self):
        raw, warned = _profile_with(lambda p: p.add_metadata("k", "an ordinary value 42"))
        assert json.loads(raw)["k"] == "an ordinary value 42"
        assert warned == []


# ---- exact semantics (reference 3.3 / 3.4) ----------------------------------

class TestExactSemantics:
    def test_reference_examples(self):
        assert sanitize_value("line\nbreak\tand tab") == ("line break and tab",
                                                          ["1 tab", "1 newline"])
        assert sanitize_value('has "quotes" inside') == ("has 'quotes' inside",
                                                         ["2 double quote"])
        assert sanitize_value("\x00\x1f\x7f") == ("  \x7f", ["1 control character U+0000",
                                                            "1 control character U+001F"])

    def test_every_named_character_and_code_point_order(self):
        safe, notes = sanitize_value('\\"\f\r\n\t\b\x01')
        assert safe == "/'      "
        assert notes == ["1 control character U+0001", "1 backspace", "1 tab", "1 newline",
                         "1 form feed", "1 carriage return", "1 double quote", "1 backslash"]

    def test_what_passes_through(self):
        for text in ["\x7f", "\u2028", "é", "你好", "'", "/"]:
            assert sanitize_value(text) == (text, [])

    def test_non_str_values_go_through_str(self):
        assert sanitize_value(123) == ("123", [])
        assert sanitize_value(None) == ("None", [])

    def test_clean_value_is_the_same_object(self):
        text = "x" * 100
        assert sanitize_value(text)[0] is text

    def test_json_keys_are_sanitised_and_notes_concatenated(self):
        safe, notes = sanitize_json_value(json.dumps({'k"1': ['a\\b', 'c"d']}))
        assert json.loads(safe) == {"k'1": ["a/b", "c'd"]}
        assert notes == ["1 double quote", "1 backslash", "1 double quote"]

    def test_json_is_reserialised_without_ascii_escapes(self):
        assert sanitize_json_value('{"a":1}') == ('{"a": 1}', [])
        assert sanitize_json_value('"\\u00e9"') == ('"é"', [])
        assert sanitize_json_value('{"a": null, "b": true, "c": 1.5}')[0] == \
            '{"a": null, "b": true, "c": 1.5}'

    def test_non_json_text_is_not_wrapped(self):
        assert sanitize_json_value('not "json"') == ("not 'json'", ["2 double quote"])

    def test_warning_wording_and_category(self):
        prof = profile(activities=[ProfilerActivity.CPU])
        apply_metadata_sanitizer_patch()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            prof.add_metadata('k"', 'v\n')  # not recording: upstream does nothing
        texts = [(w.category, str(w.message), w.filename) for w in caught]
        assert texts[0][0] is UserWarning
        assert texts[0][1] == (
            "add_metadata('k\"'): the key contained characters that cannot survive the trace "
            "writer and was altered (1 double quote). Writing it unchanged would produce an "
            "unparseable trace file.")
        assert texts[1][1] == (
            "add_metadata('k\"'): the value contained characters that cannot survive the "
            "trace writer and was altered (1 newline). Writing it unchanged would produce an "
            "unparseable trace file.")
        # stacklevel=3 points at the caller, this file.
        assert texts[0][2] == __file__
        assert len(texts) == 2

    def test_docstrings_are_kept(self):
        apply_metadata_sanitizer_patch()
        assert profile.add_metadata.__doc__ and "metadata" in profile.add_metadata.__doc__
        assert getattr(profile, _sanitizer._PATCHED_FLAG) is True

    def test_import_acceltrace_torch_applies_the_patch(self):
        import acceltrace.torch  # noqa: F401
        assert getattr(torch.profiler.profiler._KinetoProfile, _sanitizer._PATCHED_FLAG)
