/**
 * The recordings benchmark's baseline: the least a Node server can do to move the same bytes. GET streams
 * the file with plain fs.createReadStream to the socket; PUT pipes the request into fs.createWriteStream.
 * No framework, no database, no auth. Usage: node -r ./scripts/register.js bench/recordings-baseline-server.ts
 * with PORT, FILE (to serve) and UPLOAD_DIR (where uploads go) in the environment.
 */
import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { createServer } from 'node:http';
import * as path from 'node:path';
import { pipeline } from 'node:stream';

const file = process.env.FILE!;
const uploadDir = process.env.UPLOAD_DIR!;
let uploads = 0;

createServer((request, response) => {
  if (request.method === 'GET' && request.url === '/health') {
    response.end('ok');
  } else if (request.method === 'GET') {
    response.writeHead(200, { 'Content-Type': 'audio/mpeg', 'Content-Length': statSync(file).size });
    pipeline(createReadStream(file), response, () => undefined);
  } else if (request.method === 'PUT') {
    pipeline(request, createWriteStream(path.join(uploadDir, `${process.pid}-${uploads++}.mp3`)), (error) => {
      response.statusCode = error ? 500 : 204;
      response.end();
    });
  } else {
    response.statusCode = 404;
    response.end();
  }
}).listen(Number(process.env.PORT), '127.0.0.1');
