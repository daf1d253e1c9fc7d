import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** The project root: compiled code runs from dist/src, schema files stay at the root. */
export const PROJECT_ROOT = path.resolve(fileURLToPath(new URL('../../', import.meta.url)));
export const SCHEMA_DIR = path.join(PROJECT_ROOT, 'schema');
