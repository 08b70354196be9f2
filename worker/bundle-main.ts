// `npm run build`'s last step: writes the prebuilt workflow bundles beside the built worker
// (dist/workflow-bundles), or into the directory given as the one argument.
import { shippedBundleDir, writeWorkflowBundles } from './workflow-bundle.js';

const dir = process.argv[2] ?? shippedBundleDir();
if (!dir) {
  console.error('usage: bundle-main <directory> (run from dist/, the directory defaults to dist/workflow-bundles)');
  process.exit(2);
}
for (const file of await writeWorkflowBundles(dir)) console.log(`workflow bundle: ${file}`);
