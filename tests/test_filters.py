from atlas.render import filters


def test_numbers():
    assert filters.thousands(49587456) == "49,587,456"
    assert filters.tex_thousands(9216) == "9{,}216"
    from atlas import i18n
    with i18n.language("es"):           # grouped as the Spanish text groups: not 4 digits, then by points
        assert (filters.tex_thousands(9216), filters.tex_thousands(16515072)) == ("9216", "16{.}515{.}072")
        assert filters.cost_tex("6144*B*T**2 + 16515072*B*T") == "6144\\,B\\,T^{2}+16{.}515{.}072\\,B\\,T"
    assert filters.cost_tex("6144*B*T**2 + 16515072*B*T") == "6{,}144\\,B\\,T^{2}+16{,}515{,}072\\,B\\,T"
    assert filters.signed(-114300698) == "−114,300,698"
    assert filters.signed(0) == "0"
    assert filters.calculation((768, 2304)) == "768 × 2304"
    assert filters.calculation(()) == "1"
    assert filters.si(2207121408, "FLOPs") == "2.21 GFLOPs" and filters.si(0, "FLOPs") == "0 FLOPs"   # not 0.00


def test_md_text_is_inert():
    out = filters.md_text("<script>alert(1)</script> {{ x }} $a$ *b* [c](d)")
    assert "<script>" not in out
    assert "\\{\\{" in out and "\\$a\\$" in out and "\\*b\\*" in out and "\\[c\\]" in out


def test_md_code_backticks():
    assert filters.md_code("a`b") == "``a`b``"


def test_cost_formulas_in_symbols_sympy_reads_as_its_own_names():
    """S (an encoder-decoder's source length) is sympy's singleton registry to sympify, N its numeric evaluation,
    E Euler's number: each a dim here, printed and evaluated as one."""
    assert filters.cost_tex("512*B*S**2 + 64*B*S*T") == r"512\,B\,S^{2}+64\,B\,S\,T"
    assert filters.at_reference("512*B*S**2 + 64*B*S*T", (("B", 2), ("S", 3), ("T", 5))) == 2 * (512 * 9 + 64 * 15)
    assert filters.at_reference("N*E + floor(I/2)", (("N", 3), ("E", 4), ("I", 7))) == 15
    from atlas.analyse.equations.lowering_context import same_size
    assert same_size("2*S", "S + S") and not same_size("S", "T")


def test_cost_formulas_with_a_strided_size_print():
    """A strided conv's size is floor(H/2 - 1/2) + 1; its cost's terms hold floors, which a polynomial's degree does
    not take (the site build crashed on them)."""
    tex = filters.cost_tex("576*B*floor(H/2 - 1/2)*floor(W/2 - 1/2) + 24*B*H*W + 1152*B*floor(H/2 - 1/2)")
    assert tex.startswith(r"24\,B\,H\,W+576\,B\,\left\lfloor") and tex.count(r"\lfloor") == 3
    assert filters.at_reference("24*B*H*W + 8*floor(H/2 - 1/2)", (("B", 1), ("H", 7), ("W", 2))) == 24 * 14 + 8 * 3


def test_a_message_quotes_names_as_code_and_keeps_the_rest_inert():
    """Notes and reasons quote the code's names in backticks (`input_ids`): they showed as literal backticks."""
    from atlas.render.filters import md_message
    assert md_message("inferred: `input_ids` is the model's *main* name") == \
        r"inferred: <code>input_ids</code> is the model's \*main\* name"
    assert md_message("an odd ` and <b>") == r"an odd \` and &lt;b&gt;"
    assert md_message("`</p><script>x</script>`") == "<code>&lt;/p&gt;&lt;script&gt;x&lt;/script&gt;</code>"
    quoted = md_message("`ValueError: give either `input_ids` or `inputs_embeds``")   # an error quoted whole
    assert "<code>input_ids</code>" in quoted and "ValueError: give either" in quoted and "<script" not in quoted
