// The launcher is scripts/lib/server-process.ts; scripts/cluster.ts still imports these from here.
export { compileServer, startScriptEnvironment } from '../lib/server-process.js';
