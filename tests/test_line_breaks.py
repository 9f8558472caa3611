"""Long equations written so that a narrow column may break them (atlas.render.breakable_latex): KaTeX breaks a line
only between the boxes it sets at the outer level, one `base` per stretch between operators."""

import json

from conftest import ROOT

from atlas.document.equations_json import equations_from
from atlas.render.breakable_latex import breakable
from atlas.render.line_breaks import any_long
from atlas.render.latex import latex
from atlas.render.math_markup import is_long, marked, names_of, plain, strip_markup


def _equations(slug: str, cid: str):
    data = json.loads((ROOT / "docs" / slug / "atlas.json").read_text())
    return equations_from(next(c for c in data["components"] if c["id"] == cid))


def _bases(html: str) -> int:
    return html.count('class="katex-base"') + html.count('class="base"')


def test_llamas_attention_breaks_inside_its_parentheses():
    """o = concat_h(softmax(q′k′ᵀ/√128 + M) v): as the JSON writes it, the only place to break is after "=";
    written for the site, the "+" inside the parentheses is a place too, as are the opening parenthesis and the
    factor v after the softmax; the parentheses keep a size that holds the fraction."""
    from atlas.site.katex import Renderer
    e = _equations("llama-3-8b", "model.layers.self_attn")
    names = names_of(e)
    line = e.paper.summary[0]
    name = lambda key: names[key]          # noqa: E731
    assert latex(line, name) == (r"o = \operatorname{concat}_h\!\left(\operatorname{softmax}\!\Big(\frac{q'\,"
                                 r"{k'}^{\mathsf T}}{\sqrt{128}}+M\Big)\,v\right)")
    assert breakable(line, name) == (r"o = \operatorname{concat}_h\!\biggl(\allowbreak \operatorname{softmax}\!\Big("
                                     r"\frac{q'\,{k'}^{\mathsf T}}{\sqrt{128}}+M\Big)\,\allowbreak v\biggr)")
    render = Renderer()
    assert _bases(render.render(latex(line, name), True)) == 2
    assert _bases(render.render(breakable(line, name), True)) == 5        # after =, (, + and before v
    assert is_long(line, names)
    assert marked(line, names, {}, "").count(r"\biggl(") == 1


def test_a_script_on_parentheses_goes_to_the_closing_one_and_arguments_may_break_after_commas():
    """OLMoE's experts: {(…)}^h and (…)[…] at the outer level become (…)^h and (…) [ … ] with a break allowed
    between; a comma between arguments allows a break; every line still renders."""
    from atlas.site.katex import Renderer
    e = _equations("olmoe-1b-7b", "model.layers.mlp.experts")
    names = names_of(e)
    render = Renderer()
    for step in e.steps:
        tex = breakable(step.formula, lambda key: names[key])
        assert _bases(render.render(tex, True)) >= _bases(render.render(latex(step.formula, lambda k: names[k]),
                                                                        True))
    last = breakable(e.steps[-1].formula, lambda key: names[key])
    assert r",\allowbreak " in last and r"\bigr)\allowbreak \bigl[" in last and r"\bigr)_j" in last


def test_a_short_line_is_written_as_the_json_writes_it_and_a_leafs_block_stays_aligned():
    """The LayerNorm's lines fit a phone: they stay one aligned block; μ_d(x) and ε are written as the JSON
    writes them."""
    e = _equations("ldlm", "latent_encoder.blocks.mlp.layer_norm")
    names = names_of(e)
    assert not any_long(e.summary, e)
    short = [line for line in e.summary if not is_long(line, names)]
    assert [plain(line, names) for line in short] == [
        r"{\mu_d(x)} = \frac{1}{768}\sum_{j=1}^{768}{x}_j",
        r"y = \gamma\odot \frac{x-{\mu_d(x)}}{\sqrt{{\sigma_d^2(x)}+\varepsilon}}+\beta", r"\varepsilon = 10^{-5}"]
    for line in short:
        assert strip_markup(marked(line, names, {}, ""), keep_streams=False) == plain(line, names)
