#!/usr/bin/env node
// Thin launcher so `npx tally …` works after `npm ci && npm run build`.
import('../dist/cli/main.js');
