// expect TS2531: a tile made with encode: false has no bytes to read
import { generateTile } from 'terrain-chunk-client';
const n: number = generateTile({ seed: 42, cx: 0, cz: 0 }, { encode: false }).bytes.length;
