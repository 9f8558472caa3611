/* Model Atlas: the size and dtype calculator of a model page's "Cost" section.

   The page carries the data (.atlas-calc's data-calc, from the model's atlas.json: the cost formulas as sympy
   writes them, the element counts of what depends on a dtype, the sizes the page's figures are at) and the
   labels in the page's language (data-labels). Every figure is evaluated exactly: the formulas are polynomials
   with rational coefficients in the sizes, evaluated with BigInt fractions (int4's half byte stays a half), and
   written with the page's language's grouping (Intl.NumberFormat). Nothing is fetched: it works offline. */
(function () {
  "use strict";

  // -- exact fractions -------------------------------------------------------------------------------------
  function gcd(a, b) {
    a = a < 0n ? -a : a;
    b = b < 0n ? -b : b;
    while (b) { var t = a % b; a = b; b = t; }
    return a;
  }
  function frac(n, d) {
    d = d === undefined ? 1n : d;
    if (d < 0n) { n = -n; d = -d; }
    var g = gcd(n, d) || 1n;
    return { n: n / g, d: d / g };
  }
  function add(a, b) { return frac(a.n * b.d + b.n * a.d, a.d * b.d); }
  function sub(a, b) { return frac(a.n * b.d - b.n * a.d, a.d * b.d); }
  function mul(a, b) { return frac(a.n * b.n, a.d * b.d); }
  function div(a, b) {
    if (b.n === 0n) throw new Error("division by zero");
    return frac(a.n * b.d, a.d * b.n);
  }
  function power(a, b) {
    if (b.d !== 1n || b.n < 0n) throw new Error("exponent not a whole number");
    var out = frac(1n);
    for (var i = 0n; i < b.n; i++) out = mul(out, a);
    return out;
  }
  function whole(n) { return frac(BigInt(n)); }

  // -- sympy's text of a polynomial: integers, symbols, + - * / ** and parentheses ---------------------------
  function tokens(text) {
    var out = [], re = /\s*(\d+|[A-Za-z_][A-Za-z_0-9]*|\*\*|[-+*\/()])/y, m;
    re.lastIndex = 0;
    while (re.lastIndex < text.replace(/\s+$/, "").length) {
      m = re.exec(text);
      if (!m) throw new Error("cannot read " + JSON.stringify(text));
      out.push(m[1]);
    }
    return out;
  }

  function evaluate(text, sizes) {
    var toks = tokens(text), i = 0;
    function peek() { return toks[i]; }
    function next() { return toks[i++]; }
    function sum() {
      var v = product();
      while (peek() === "+" || peek() === "-") v = next() === "+" ? add(v, product()) : sub(v, product());
      return v;
    }
    function product() {
      var v = unary();
      while (peek() === "*" || peek() === "/") v = next() === "*" ? mul(v, unary()) : div(v, unary());
      return v;
    }
    function unary() {
      if (peek() === "-") { next(); return sub(frac(0n), unary()); }
      if (peek() === "+") { next(); return unary(); }
      var base = atom();
      if (peek() === "**") { next(); return power(base, unary()); }
      return base;
    }
    function atom() {
      var t = next();
      if (t === "(") {
        var v = sum();
        if (next() !== ")") throw new Error("unbalanced parentheses in " + text);
        return v;
      }
      if (/^\d+$/.test(t)) return frac(BigInt(t));
      if (t !== undefined && Object.prototype.hasOwnProperty.call(sizes, t)) return sizes[t];
      throw new Error("unknown term " + t + " in " + text);
    }
    var value = sum();
    if (i !== toks.length) throw new Error("cannot read " + text);
    return value;
  }

  // -- numbers as the page's language writes them ------------------------------------------------------------
  function formatter(lang) {
    var integer = new Intl.NumberFormat(lang);    // the locale's own grouping: 4096 but 50.257 in Spanish
    var point = new Intl.NumberFormat(lang).formatToParts(1.5).filter(function (p) {
      return p.type === "decimal";
    })[0].value;
    function exact(v) {
      var sign = v.n < 0n ? "-" : "", n = v.n < 0n ? -v.n : v.n;
      var text = integer.format(n / v.d), rest = n % v.d;
      if (!rest) return sign + text;
      var digits = "";
      for (var k = 0; rest && k < 6; k++) { rest *= 10n; digits += (rest / v.d).toString(); rest %= v.d; }
      return (rest ? "≈ " : "") + sign + text + point + digits;
    }
    var UNITS = ["", "k", "M", "G", "T", "P", "E"];
    function si(v, unit) {          // as the page's own figures: three significant digits, decimal prefixes
      var x = Number(v.n) / Number(v.d), step = 0;
      if (x === 0) return "0 " + unit;
      while (Math.abs(x) >= 1000 && step < UNITS.length - 1) { x /= 1000; step++; }
      var int = String(Math.trunc(Math.abs(x))).length;
      var places = Math.max(0, 2 - (Math.abs(x) >= 1 ? int - 1 : 0));
      var text = new Intl.NumberFormat(lang, { minimumFractionDigits: places, maximumFractionDigits: places,
                                               useGrouping: false }).format(x);
      return text + " " + UNITS[step] + unit;
    }
    return { exact: exact, si: si };
  }

  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (all, key) {
      return Object.prototype.hasOwnProperty.call(values, key) ? values[key] : all;
    });
  }

  function element(tag, attrs, text) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    if (text !== undefined) el.textContent = text;
    return el;
  }

  // -- one calculator ----------------------------------------------------------------------------------------
  function build(holder, index) {
    var data = JSON.parse(holder.getAttribute("data-calc"));
    var L = JSON.parse(holder.getAttribute("data-labels"));
    var lang = document.documentElement.lang || "en";
    var fmt = formatter(lang);
    var id = "atlas-calc-" + index;
    var dtypes = {};
    data.dtypes.forEach(function (d) { dtypes[d.name] = frac(BigInt(d.bytes[0]), BigInt(d.bytes[1])); });

    var pageSizes = data.sizes.map(function (s) { return s.symbol + " = " + fmt.exact(whole(s.default)); });
    holder.appendChild(element("h3", { id: id + "-title" }, L.title));
    holder.appendChild(element("p", {}, fill(L.intro, { sizes: pageSizes.join(", "), dtype: data.dtype })));
    var form = element("form", { "class": "atlas-calc-form", "aria-labelledby": id + "-title" });
    form.addEventListener("submit", function (e) { e.preventDefault(); });

    var inputs = {};
    if (data.sizes.length) {
      var sizesSet = element("fieldset", { "class": "atlas-calc-sizes" });
      sizesSet.appendChild(element("legend", {}, L.sizes));
      data.sizes.forEach(function (s) {
        var field = element("div", { "class": "atlas-calc-field" });
        var label = element("label", { "for": id + "-" + s.symbol });
        label.appendChild(element("span", { "class": "atlas-calc-symbol" }, s.symbol));
        if (s.name) label.appendChild(document.createTextNode(" " + s.name));
        var input = element("input", { id: id + "-" + s.symbol, type: "text", inputmode: "numeric",
                                        autocomplete: "off", spellcheck: "false", "data-symbol": s.symbol });
        input.value = String(s.default);
        field.appendChild(label);
        field.appendChild(input);
        sizesSet.appendChild(field);
        inputs[s.symbol] = input;
      });
      form.appendChild(sizesSet);
    }

    var selects = {};
    var dtypeSet = element("fieldset", { "class": "atlas-calc-dtypes" });
    dtypeSet.appendChild(element("legend", {}, L.dtypes));
    function dtypeField(key, label, weights) {
      var field = element("div", { "class": "atlas-calc-field" });
      field.appendChild(element("label", { "for": id + "-dtype-" + key }, label));
      var select = element("select", { id: id + "-dtype-" + key, "data-dtype": key });
      data.dtypes.forEach(function (d) {
        if (d.weights_only && !weights) return;
        var option = element("option", { value: d.name },
                             d.weights_only ? fill(L.weights_only, { dtype: d.name }) : d.name);
        if (d.name === data.dtype) option.selected = true;
        select.appendChild(option);
      });
      field.appendChild(select);
      dtypeSet.appendChild(field);
      selects[key] = select;
    }
    dtypeField("weights", L.weights, true);
    if (data.activations) dtypeField("activations", L.activations, false);
    if (data.kv_cache_elements_per_token) dtypeField("kv", L.kv_cache, false);
    form.appendChild(dtypeSet);

    var reset = element("button", { type: "button", "class": "md-button atlas-calc-reset" }, L.reset);
    form.appendChild(reset);
    holder.appendChild(form);

    var message = element("p", { "class": "atlas-calc-invalid", role: "alert" });
    message.hidden = true;
    holder.appendChild(message);
    var results = element("dl", { "class": "atlas-calc-results", "aria-live": "polite" });
    holder.appendChild(results);

    function row(key, label, value, how) {
      var item = element("div", { "class": "atlas-calc-row", "data-figure": key });
      item.appendChild(element("dt", {}, label));
      var dd = element("dd", {});
      dd.appendChild(element("span", { "class": "atlas-calc-value" }, value));
      if (how) dd.appendChild(element("span", { "class": "atlas-calc-how" }, how));
      item.appendChild(dd);
      results.appendChild(item);
    }
    function amount(v, unit, si) { return fmt.exact(v) + " " + unit + " (" + fmt.si(v, si) + ")"; }

    function sizesNow() {
      var out = {}, bad = null;
      Object.keys(inputs).forEach(function (s) {
        var text = inputs[s].value.replace(/[\s,.'’_\u00a0\u202f]/g, "");
        var ok = /^\d+$/.test(text) && BigInt(text) >= 1n;
        inputs[s].setAttribute("aria-invalid", ok ? "false" : "true");
        if (ok) out[s] = frac(BigInt(text));
        else if (!bad) bad = s;
      });
      return bad ? { bad: bad } : { sizes: out };
    }

    function update() {
      var now = sizesNow();
      results.textContent = "";
      if (now.bad) {
        message.textContent = fill(L.invalid, { symbol: now.bad });
        message.hidden = false;
        return;
      }
      message.hidden = true;
      var sizes = now.sizes;
      var w = selects.weights.value, wb = dtypes[w];
      var unread = {};
      data.unread.forEach(function (key) { unread[key] = true; });
      if (data.flops) row("flops", L.flops, amount(evaluate(data.flops, sizes), L.flops_unit, "FLOPs"));
      else if (unread.flops) row("flops", L.flops, L.not_recomputed);
      if (data.flops_causal) {
        row("flops_causal", L.flops_causal, amount(evaluate(data.flops_causal, sizes), L.flops_unit, "FLOPs"));
      } else if (unread.flops_causal) {
        row("flops_causal", L.flops_causal, L.not_recomputed);
      }
      if (unread.activations) row("activations", L.activation_memory, L.not_recomputed);
      var activations = null;
      if (data.activations) {
        var a = selects.activations.value, ab = dtypes[a];
        var elements = evaluate(data.activations.elements, sizes);
        var fixed = evaluate(data.activations.fixed_bytes, sizes);
        activations = add(mul(elements, ab), fixed);
        row("activations", L.activation_memory, amount(activations, L.bytes, "B"),
            fill(L.activation_how, { elements: fmt.exact(elements), size: fmt.exact(ab), dtype: a,
                                     fixed: fmt.exact(fixed) }));
      }
      if (data.kv_cache_elements_per_token) {
        var k = selects.kv.value, kb = dtypes[k];
        var kvElements = whole(data.kv_cache_elements_per_token);
        var perToken = mul(kvElements, kb);
        row("kv_per_token", L.kv_per_token, fmt.exact(perToken) + " " + L.bytes,
            fill(L.kv_how, { elements: fmt.exact(kvElements), size: fmt.exact(kb), dtype: k }));
        var b = sizes.B || (data.pinned.B ? whole(data.pinned.B) : frac(1n));     // B pinned: the record's
        row("kv_all", L.kv_all, amount(mul(mul(perToken, sizes.T), b), L.bytes, "B"),
            fill(L.kv_all_how, { per_token: fmt.exact(perToken), t: fmt.exact(sizes.T), b: fmt.exact(b) }));
      }
      var parameters = whole(data.parameters), trained = whole(data.trained);
      var weights = mul(parameters, wb);
      row("weights", L.weight_memory, amount(weights, L.bytes, "B"),
          fill(L.weight_how, { parameters: fmt.exact(parameters), size: fmt.exact(wb), dtype: w }));
      var g = w === "int4" ? data.gradients_for_int4 : w;
      var training = add(weights, mul(trained, add(dtypes[g], mul(frac(2n), dtypes[data.adam_states]))));
      row("training", L.training, amount(training, L.bytes, "B"),
          fill(L.training_how, { gradients: g, adam: data.adam_states, trained: fmt.exact(trained) }));
      if (activations) {
        row("training_activations", L.training_activations, amount(add(training, activations), L.bytes, "B"),
            L.training_activations_how);
      }
    }

    form.addEventListener("input", update);
    form.addEventListener("change", update);
    reset.addEventListener("click", function () {
      data.sizes.forEach(function (s) { inputs[s.symbol].value = String(s.default); });
      Object.keys(selects).forEach(function (key) { selects[key].value = data.dtype; });
      update();
    });
    holder.appendChild(element("p", { "class": "atlas-calc-assumed" }, L.assumed));
    update();
    holder.hidden = false;
  }

  function init() {
    document.querySelectorAll(".atlas-calc[data-calc]").forEach(function (holder, i) {
      if (!holder.hasAttribute("data-built")) {
        holder.setAttribute("data-built", "");
        build(holder, i);
      }
    });
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(init);
  } else {
    document.addEventListener("DOMContentLoaded", init);
  }
})();
