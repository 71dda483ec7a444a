// expect TS2531: with metres: false there are no heights in metres
import { decodeTile } from 'terrain-chunk-client';
const first: number = decodeTile(new Uint8Array(64), { metres: false }).heights[0];
