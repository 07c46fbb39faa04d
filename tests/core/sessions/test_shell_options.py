"""The one option scanner (`shell.options.scan`): every program's options
read the same way from its spec, failing closed where a reading is unsure."""

from __future__ import annotations

from mecha.core.sessions.shell.options import scan, spec

SED = spec(["-n", "-E"], ["-e", "-l"], optional=["-i"], runs=["-f"], bundles=True, stops=False)
REBASE = spec(runs=["-x", "--exec"], unknown_is_flag=True, stops=False, bundles=True, abbreviates=True)
WRAPPER = spec(["-E"], ["-u"])


def test_a_valued_option_takes_the_next_word_or_its_attached_value():
    found = scan(["-e", "s/a/b/", "-l5", "f.txt"], spec(valued=["-e", "-l"], stops=False))
    assert found is not None and found.options == [("-e", "s/a/b/"), ("-l", "5")] and found.operands == ["f.txt"]
    assert scan(["--expression=p"], spec(valued=["--expression"])).options == [("--expression", "p")]


def test_a_bundle_is_read_letter_by_letter_and_a_valued_letter_takes_the_rest():
    # Pins: `-euo pipefail` read as one unknown option; `-ne p` as one too.
    assert scan(["-ne", "p"], SED).options == [("-n", None), ("-e", "p")]
    assert scan(["-i.bak", "x"], SED).options == [("-i", ".bak")]
    shells = spec([f"-{c}" for c in "euxc"], ["-o"], bundles=True)
    assert scan(["-euo", "pipefail", "-c", "ls"], shells).rest == ["ls"]


def test_an_option_that_runs_something_fails_the_scan_whole_bundled_or_abbreviated():
    assert scan(["-f", "script.sed"], SED) is None
    assert scan(["-ix", "curl x", "main"], REBASE) is None
    assert scan(["--exe=curl x", "main"], REBASE) is None
    assert scan(["-i", "--onto", "x", "main"], REBASE) is not None


def test_a_wrapper_stops_at_its_command_and_refuses_what_it_does_not_know():
    assert scan(["-u", "root", "cat", "-E", "x"], WRAPPER).rest == ["cat", "-E", "x"]
    assert scan(["--bogus", "cat"], WRAPPER) is None
    assert scan(["--", "-weird"], WRAPPER).rest == ["-weird"]


def test_a_word_known_only_when_it_runs_fails_where_an_option_could_stand():
    # `"$X"` may be `-exec` or `-f script`: unknown, so untrusted.
    assert scan(["-n", None], SED) is None
    assert scan([None, "-c"], spec(unknown_is_flag=True, stops=False, unseen_is_operand=True)) is not None


def test_a_valued_option_at_the_end_with_no_value_fails():
    assert scan(["-u"], WRAPPER) is None
