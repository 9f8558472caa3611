from atlas import filters


def test_numbers():
    assert filters.thousands(49587456) == "49,587,456"
    assert filters.tex_thousands(9216) == "9{,}216"
    assert filters.signed(-114300698) == "−114,300,698"
    assert filters.signed(0) == "0"
    assert filters.calculation((768, 2304)) == "768 × 2304"
    assert filters.calculation(()) == "1"


def test_md_text_is_inert():
    out = filters.md_text("<script>alert(1)</script> {{ x }} $a$ *b* [c](d)")
    assert "<script>" not in out
    assert "\\{\\{" in out and "\\$a\\$" in out and "\\*b\\*" in out and "\\[c\\]" in out


def test_md_code_backticks():
    assert filters.md_code("a`b") == "``a`b``"
