// expect TS2322: cx is a number
import { generateTile } from 'terrain-chunk-client';
generateTile({ seed: 42, lod: 0, cx: '3', cz: 0 });
