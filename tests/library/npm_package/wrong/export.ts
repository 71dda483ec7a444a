// expect TS2305: the module has no such export
// (each file here: the error on line 3)
import { fetchChunk } from 'terrain-chunk-client';
fetchChunk();
