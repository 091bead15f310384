import { describe, expect, it } from 'vitest';
import { withoutOutsideFetches } from './board-page.ts';

describe("the queue board's page", () => {
  it('leaves out what it would fetch from another origin, and keeps its own files', () => {
    const page = `<head><base href="/admin/queues/">
<link rel="icon" href="static/images/logo.svg">
<link href="https://fonts.googleapis.com/css2?family=IBM+Plex+Sans&display=swap" rel="stylesheet">
<link rel=stylesheet href=//cdn.example/x.css><LINK HREF='HTTP://fonts.example/y.css' rel="preload">
<link href="static/css/main.css" rel="stylesheet"></head>
<body><script src="https://cdn.example/tracker.js"></script><script defer src="static/js/main.js"></script></body>`;
    const served = withoutOutsideFetches(page);
    expect(served).not.toMatch(/googleapis|cdn\.example|fonts\.example/i);
    expect(served).toContain('href="static/images/logo.svg"');
    expect(served).toContain('href="static/css/main.css"');
    expect(served).toContain('src="static/js/main.js"');
  });
});
