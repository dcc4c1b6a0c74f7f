"""The kernel-language reference is generated from the builtin catalogue (STYLE.md 8)."""
from pysycl.frontend import builtins, catalogue_doc
from pysycl.ir.ops import MATH_FUNCTIONS


def test_committed_reference_is_up_to_date():
    assert catalogue_doc.DOC_PATH.read_text() == catalogue_doc.render(), (
        "docs/kernel-language.md is stale: run python -m pysycl.frontend.catalogue_doc")


def test_every_math_function_is_documented_with_its_spellings():
    text = catalogue_doc.render()
    for name in MATH_FUNCTIONS:
        assert f"`sycl.math.{name}`" in text
    entry = builtins.catalogue()["math.asin"]
    assert builtins.spellings(entry) == ["math.asin", "np.arcsin", "sycl.math.asin"]


def test_every_entry_has_a_description():
    missing = [n for n, e in builtins.catalogue().items() if not e.doc]
    assert missing == []
