// Starts Swagger UI on /docs from this server's own OpenAPI document. A separate file, not an
// inline script, so the page's CSP allows scripts from this origin only.
(() => {
  "use strict";
  globalThis.addEventListener("DOMContentLoaded", async () => {
    const root = document.getElementById("swagger-ui");
    let spec;
    try {
      // The 3.0 rendering of /openapi.json (same routes and examples): Swagger UI draws it about a
      // second sooner than the 3.1 one. Same request as the page's preload, so the preloaded answer is used.
      const res = await fetch("/openapi-3.0.json");
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      spec = await res.json();
    } catch {
      root.textContent = "The API description could not be loaded; reload the page to try again.";
      return;
    }
    // "Try it out" calls the server this page came from (the document names the configured base URL,
    // which behind a proxy or in a test may be another origin that the CSP does not allow).
    spec.servers = [{ url: location.origin, description: "This server" }];
    globalThis.SwaggerUIBundle({
      spec,
      domNode: root,
      // Deep links put an <a> inside each operation's toggle button (nested interactive controls).
      deepLinking: false,
      docExpansion: "list",
      defaultModelsExpandDepth: 1,
      defaultModelExpandDepth: 3,
      displayRequestDuration: true,
      filter: true,
      // The key typed into Authorize lives in this tab's memory only: never stored, never in a URL.
      persistAuthorization: false,
      // No third-party request: the public validator badge is off.
      validatorUrl: null,
      tryItOutEnabled: false,
    });
    // Swagger UI puts its title block, filter and Authorize bar outside its <main>: they are named
    // as regions, so every part of the page is inside a landmark (again whenever React redraws them).
    const regions = [
      [".information-container", "About this API"],
      [".filter-container", "Filter"],
      [".scheme-container", "Authorization"],
    ];
    const label = () => {
      // Each operation's responses table is a region: named after its operation, so each name is unique.
      for (const table of root.querySelectorAll("table[role=region]:not([aria-label])")) {
        const summary = table.closest(".opblock")?.querySelector(".opblock-summary-control");
        const method = summary?.querySelector(".opblock-summary-method")?.textContent ?? "";
        const path = summary?.querySelector(".opblock-summary-path")?.getAttribute("data-path") ?? "";
        table.setAttribute("aria-label", `Responses of ${method} ${path}`.trim());
      }
      for (const [selector, name] of regions) {
        const node = root.querySelector(selector);
        if (node && !node.closest("main") && node.getAttribute("role") !== "region") {
          node.setAttribute("role", "region");
          node.setAttribute("aria-label", name);
        }
      }
    };
    new MutationObserver(label).observe(root, { childList: true, subtree: true });
    label();
    document.body.dataset.ready = "true";
  });
})();
