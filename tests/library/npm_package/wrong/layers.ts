// expect TS2322: no such layer
import { tileUrl } from 'terrain-chunk-client';
tileUrl('', { seed: 42, cx: 0, cz: 0, layers: 'objects' });
