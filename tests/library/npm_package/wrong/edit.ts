// expect TS2322: a raise needs its strength
import { postEdits } from 'terrain-chunk-client';
await postEdits('', { seed: 42 }, [{ op: 'raise', x: 0, z: 0, radius: 30 }]);
