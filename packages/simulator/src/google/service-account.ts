/**
 * The simulator's service-account key pair. Like the SigV4 secret (bedrock/sigv4.ts), it is a
 * published test credential of the simulator, never a real one: a gateway given
 * `simulatorServiceAccount(...)` signs its token requests with this private key, and the
 * simulator's token endpoint checks the RS256 signature with its public half, as Google's would.
 */

/** Test-only private key (PKCS #8). It authorizes nothing but the simulator. */
export const SIMULATOR_PRIVATE_KEY = `-----BEGIN PRIVATE KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDM+f5fcBnKj20U
pFTRYxCVhRBX3PtBQr/3NO2I9YVH9xAO5aDqU2gkPdpxgGk3hJycVO0lwD28Oa1w
fiBnLwDsqJBZv0jIOlsiuh0Cd+iZY8kH80wYNOBbqXLikqjDojzWYV4l3aFW6cAt
kgj2RAi7Ib2i6Kzr7Q/Diexv0FP8tHlrw6bl05hA6KZLA3xUe0Yd+NeeawQHwbKc
NniYnIUjbzXXMUUN2NYhmi0EoQZeQw0n2OSYkYfJfnbKcIyX6ZFF6Yaf7pGuEAE+
12niKOEZEf4rjo7RXO1Wo9RNvA0IkMWTAlcQSNWUyo+R+lYtyYT7pAtEDZ8dYnl0
lrsYjuyrAgMBAAECggEAVOGVX+opFAOu1SRz5z2RyYkPyoK9HTpKClHFp7icV7/M
y451w3OEpbVjdysI5y+oNujIR6DDL+Xml7XzLyd8x4PKOxAGULwxr0DI8JO9I3/5
6Kvsr/19hxe1dnPrJRBTByfM9/s+a6JirbxSr8BeqTeAsyyNJynFJGFCIs9vaC6K
et6uihQH/SYn39Udun4dpq1Hy4xF2wl8Znw9aOcwIVKa3lFIHcQJZT0Y58XAJxoV
K3wXKvbn7IX1WwgcWfux96oqRwoAOmeG9WIMv6tObVQXJHRgPQAkHNJkfQaqbbce
Rt/Pe3dPiirNWGhv8NGir0T7OORHq7l52JIrQUdDOQKBgQDnKFKGlVgDqq90V8tK
AJ6F8FlIHOMFDmt31rge0WCaiZXyALXuhUTjg4zPRR3CRrUXKxp+kc+7jytm1Rde
ENif4GUe+5r7M52icKUoTmIZaOGdA71qf/lELFmKymUIT4Q4xfm1JDtBG0Yqezwp
d0rhesfdZpeYa9M/i0jWTYG8vQKBgQDjAV9I4zwWOMK8fdFHNNHuBi9VKj0E85bG
YQIQRCOd7OYLd6kheQ8v8phGJe3gpsz19os6bUrLCQULNrbPLcOo1cvGXYei2bi3
tilBg40k3FIbcO03lfj0XWIv77ttdl86yCC2HYfZc/7lNtXxPGO4yPCugy7qXdJz
AiQZHQTJhwKBgGVSAUpIb7m7uQgv60VWnCVtQlUfhEqVFXoDvdSURdm28OiQcy5H
b/ihkrjPPMoJIBs1o3lTBFDb4lRClul+TNVXEDvSYQ42g6PN6DaQlOM6W5ntJ7tk
uKevINh6+mn4IKaZ8Gf7p5VUFR9NwQMT7NiEbtKWw1/l80RpEtYMRw+pAoGBANXc
PxZ97efJhbzqk7UP0A78iK8lYeM+UXeHgNguOZfYzUlUbGR6lpJHbKn5pceVnVbD
9JsQx/vL/ZJ483Tv2ns/IAE7sEL99wYseWWdN+XYIwpzMyjBA4/EQnKC2gLgGAta
62ZnH8r/es4bASeKCzDVLdpbAGIQDeoHxFZcflwVAoGBAK4ydICL+U8PPwL+LUqp
BXXaNIrrdAs8QDSajtGjgkupR95WwZ8UlpqVrY/NuCv4+PYJggn2PQnGnwKGJ4kH
VVqW413bTRifJMftV52IHAoY0Qg43dyf0GAU9ad1gyJdDbeCRMawbKMbD2CitE3B
RJJvQzTDfgB9n4aOS6ONO8mN
-----END PRIVATE KEY-----
`

/**
 * A service-account JSON (as Google's console downloads it) for `clientEmail`, signed with the
 * simulator's key pair; `tokenUri` is the simulator's token endpoint (`<url>/token`).
 */
export function simulatorServiceAccount(clientEmail: string, projectId: string, tokenUri: string): Record<string, string> {
  return {
    type: 'service_account',
    project_id: projectId,
    private_key_id: 'simulator-key-1',
    private_key: SIMULATOR_PRIVATE_KEY,
    client_email: clientEmail,
    client_id: '100000000000000000001',
    auth_uri: 'https://accounts.google.com/o/oauth2/auth',
    token_uri: tokenUri,
    auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
    universe_domain: 'googleapis.com',
  }
}
