"use strict";
// Image parts of cases ({type: "image", media_type, data} or {type: "image", url}) as the viewer shows them.
// An inline image becomes an <img> with a data: URL rebuilt from its checked media type and base64 (the page's
// CSP allows no other image source); a remote URL is a link, never loaded. Everything else is text nodes.
(function () {
  const TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
  const B64 = /^[A-Za-z0-9+/]+={0,2}$/;

  function isImage(v) { return v !== null && typeof v === "object" && !Array.isArray(v) && v.type === "image"; }

  function has(v, depth) {
    depth = depth || 0;
    if (isImage(v)) return true;
    if (depth > 32 || v === null || typeof v !== "object") return false;
    return (Array.isArray(v) ? v : Object.values(v)).some((x) => has(x, depth + 1));
  }

  function node(tag, attrs, kids) {
    const n = document.createElement(tag);
    for (const [k, val] of Object.entries(attrs || {})) n.setAttribute(k, val);
    for (const k of kids || []) n.append(k);
    return n;
  }

  function image(p) {
    const name = typeof p.name === "string" ? p.name : "";
    const size = p.width && p.height ? " " + p.width + "x" + p.height : "";
    if (typeof p.data === "string" && TYPES.has(p.media_type) && B64.test(p.data)) {
      return node("figure", { class: "image" }, [
        node("img", { src: "data:" + p.media_type + ";base64," + p.data, alt: name || "image", class: "case-image" }),
        node("figcaption", { class: "muted" }, [(name || "image") + " (" + p.media_type + size + ")"])]);
    }
    if (typeof p.url === "string" && /^https?:\/\//i.test(p.url)) {
      return node("p", { class: "image-link" }, ["remote image (not loaded): ",
        node("a", { href: p.url, rel: "noopener noreferrer nofollow", target: "_blank" }, [p.url])]);
    }
    return node("p", { class: "muted" }, ["(an image that cannot be shown)"]);
  }

  // A value holding images: a list of parts as text and images in order; any other value as its JSON with each
  // image shown after it (its base64 left out of the text).
  function block(v) {
    const box = node("div", { class: "text media" });
    const parts = Array.isArray(v) ? v : [v];
    if (parts.every((p) => isImage(p) || typeof p === "string" || (p && p.type === "text"))) {
      for (const p of parts) box.append(isImage(p) ? image(p) : node("div", {}, [typeof p === "string" ? p : String(p.text)]));
      return box;
    }
    const found = [];
    const text = JSON.stringify(v, (k, x) => {
      if (isImage(x)) { found.push(x); return "[image " + found.length + "]"; }
      return x;
    }, 2);
    box.append(node("div", {}, [text]), ...found.map(image));
    return box;
  }

  window.refereeMedia = { has, block, image };
})();
