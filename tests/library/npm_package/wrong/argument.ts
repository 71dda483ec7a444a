// expect TS2345: a string is not tile bytes
import { decodeTile } from 'terrain-chunk-client';
decodeTile('not a tile');
