#!/usr/bin/env node
// The `cutout` command (npx cutout …); the code is compiled from src/cli by `npm install`.
await import('../dist/cli/main.js');
