import { compressors } from 'hyparquet-compressors'
import { asyncBufferFromFile, parquetReadObjects, parquetMetadataAsync, parquetSchema } from 'hyparquet'
const file = await asyncBufferFromFile(process.argv[2])
const meta = await parquetMetadataAsync(file)
const rows = await parquetReadObjects({ file, compressors })
const cols = Object.keys(rows[0])
const out = [cols.join(',')]
for (const r of rows) out.push(cols.map(c => r[c]).join(','))
process.stdout.write(out.join('\n') + '\n')
