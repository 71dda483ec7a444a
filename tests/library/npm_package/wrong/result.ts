// expect TS2322: xxh3() is a BigInt, not a string
import { xxh3 } from 'terrain-chunk-client';
const hash: string = xxh3(new Uint8Array(8));
