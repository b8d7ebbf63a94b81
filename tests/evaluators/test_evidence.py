"""Evidence verification: normalised fuzzy matching of quotes against the judged text."""

from __future__ import annotations

from referee.evaluators._evidence import EvidenceChecker, grounded, locate

TEXT = ("Sorry about that!  Refunds are not possible for invoices\nolder than 30 days. "
        "Please contact your bank — they’ll help.")


def test_exact_and_normalised_quotes_are_found() -> None:
    c = EvidenceChecker({"output": TEXT})
    assert c.check("Refunds are not possible for invoices older than 30 days").found  # newline vs space
    assert c.check("“REFUNDS are not possible”").found  # case and curly quotes
    assert c.check("contact your bank - they'll help").found  # dash and apostrophe variants


def test_fuzzy_tolerates_a_typo_but_not_a_paraphrase() -> None:
    c = EvidenceChecker({"output": TEXT})
    assert c.check("Refunds are not posible for invoices older than 30 days").found
    assert not c.check("We will refund every duplicate charge within 5 days").found
    assert not c.check("Refunds are always possible for invoices").found


def test_ellipsis_fragments_must_all_be_found() -> None:
    c = EvidenceChecker({"output": TEXT})
    assert c.check("Sorry about that! ... contact your bank").found
    assert not c.check("Sorry about that! ... we refund everything immediately").found


def test_short_quotes_must_match_exactly() -> None:
    c = EvidenceChecker({"output": TEXT})
    assert c.check("bank").found
    assert not c.check("banc").found


def test_sources_and_file_line_references() -> None:
    c = EvidenceChecker({"output": TEXT, "docs/policy.md": "line one\nDuplicate charges are refunded.\n"})
    hit = c.check("Duplicate charges are refunded")
    assert hit.found and hit.source == "docs/policy.md"
    assert c.check("policy.md:2").found and c.check("docs/policy.md:1-2").found
    assert not c.check("policy.md:40").found and not c.check("other.py:1").found


def test_grounded_summary_and_locate() -> None:
    c = EvidenceChecker({"output": TEXT})
    assert grounded([]) is None
    assert grounded(c.check_all(["bank", "Sorry"])) is True
    assert grounded(c.check_all(["bank", "nowhere to be seen in this"])) is False
    spans = locate("refunds are not possible for invoices older", TEXT)
    assert [TEXT[s:e] for s, e in spans] == ["Refunds are not possible for invoices\nolder"]


def test_a_quote_holding_the_whole_source_plus_invented_words_is_not_found() -> None:
    # partial_ratio aligns the shorter string: without a guard, "source + anything" would score 100.
    c = EvidenceChecker({"output": "Refunds in 30 days.", "ctx": "ok"})
    assert not c.check("Refunds in 30 days. Also we give free money to everyone forever").found
    assert c.check("Refunds in 30 days").found
    assert c.check("“Refunds in 30 days.”").found  # whole source, quote marks aside
    assert locate("Refunds in 30 days. Also we give free money to everyone", "Refunds in 30 days.") == []


def test_host_port_and_cited_file_lines_in_the_text_are_quotes() -> None:
    # Shaped like file:line, but not a reference to a given file: they are looked up as text.
    c = EvidenceChecker({"output": "Connect to db.example.com:5432 and see main.py:12 for details."})
    assert c.check("db.example.com:5432").found and c.check("main.py:12").found
    assert not c.check("main.py:13").found


def test_a_near_match_must_keep_numbers_and_negations() -> None:
    c = EvidenceChecker({"output": TEXT})
    assert c.check("Refunds are not posible for invoices older than 30 days").found  # a typo: still found
    assert not c.check("Refunds are possible for invoices older than 30 days").found  # "not" dropped
    assert not c.check("Refunds are not possible for invoices older than 60 days").found  # number changed
    d = EvidenceChecker({"output": "You don't need a receipt for orders under 50 euros."})
    assert not d.check("You do need a receipt for orders under 50 euros").found
    assert d.check("You dont need a reciept for orders under 50 euros").found


# -- strict matching (claim support) -----------------------------------------------------------------------------
POLICY = "Refunds are not issued for gift cards. Refunds for card payments arrive within 5 business days."


def test_strict_matching_takes_no_file_line_reference() -> None:
    # The rubric matcher accepts `file:line` for a source of that name; claim support must be quoted text.
    lenient = EvidenceChecker({"policy.md": POLICY})
    strict = EvidenceChecker({"policy.md": POLICY}, strict=True)
    assert lenient.check("policy.md:1").found
    assert not strict.check("policy.md:1").found
    assert not strict.check("`policy.md:1-1`").found
    assert strict.check("Refunds are not issued for gift cards").found


def test_strict_ellipsis_cannot_elide_a_negation_or_a_number() -> None:
    strict = EvidenceChecker({"p": POLICY}, strict=True)
    assert EvidenceChecker({"p": POLICY}).check("Refunds are ... issued for gift cards").found  # order-free, lenient
    assert not strict.check("Refunds are ... issued for gift cards").found  # "not" elided
    assert not strict.check("Refunds for card payments arrive within ... business days").found  # "5" elided
    assert strict.check("Refunds are not issued ... gift cards").found  # "for" elided: nothing of meaning
    assert strict.check("Refunds for card payments ... within 5 business days").found


def test_strict_ellipsis_fragments_stand_in_the_quotes_order_and_near_each_other() -> None:
    strict = EvidenceChecker({"p": POLICY}, strict=True)
    assert not strict.check("within 5 business days ... Refunds are not issued").found  # reversed order
    far = "Alpha beta gamma delta. " + "filler words here " * 40 + "Epsilon zeta eta theta."
    c = EvidenceChecker({"p": far}, strict=True)
    assert c.check("Alpha beta gamma ... delta").found
    assert not c.check("Alpha beta gamma delta ... Epsilon zeta eta theta").found  # 700 characters elided
    assert EvidenceChecker({"p": far}).check("Alpha beta gamma delta ... Epsilon zeta eta theta").found


def test_strict_ellipsis_tries_every_place_of_the_first_fragment() -> None:
    # The first "refunds are" is followed by an elided "not"; the second place joins cleanly.
    c = EvidenceChecker({"p": "Refunds are not issued for gift cards. Refunds are issued for duplicate charges."},
                        strict=True)
    assert c.check("Refunds are ... issued for duplicate charges").found
    assert not c.check("Refunds are ... issued for gift cards").found


def test_strict_fragments_tolerate_a_typo_like_the_lenient_matcher() -> None:
    c = EvidenceChecker({"p": POLICY}, strict=True)
    assert c.check("Refunds for card payments arive ... 5 business days").found


def test_the_vectorised_normalisation_is_the_character_by_character_one() -> None:
    """Long texts are normalised over arrays of code points (a 1.9 MB chunk once, quickly); the result and the
    map back to the source are exactly those of going character by character, on text full of what changes:
    quote marks, dashes, ligatures and ellipses that expand, whitespace of every kind, case, astral characters."""
    import random

    from referee.evaluators._evidence import _normalise_chars, normalise_with_map

    rng = random.Random(34)
    alphabet = ("aB c'\"`\n\t\u00a0\u2014\u00e9\u00df\ufb01\u00a8 \u2019x1.,Z\u00c5\u3000\u2026\u1680"
                "\U0001F600\u0345")
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(512, 2000)))
        norm, idx = normalise_with_map(text)
        assert (norm, [int(i) for i in idx]) == _normalise_chars(text)
    assert normalise_with_map(" " * 600) == ("", [])
